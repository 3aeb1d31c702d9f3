"""Gossip matrices of the communication graphs: ring and exponential graph, Metropolis weights.

Metropolis–Hastings weights W_ij = 1 / (1 + max(deg_i, deg_j)) on every edge and the remainder on
the diagonal give a symmetric, doubly stochastic W for any undirected graph; on a ring of m ≥ 3
nodes every weight is 1/3. The exponential graph links node i to i ± 2^k (k = 0, 1, ...,
< m / 2), so it has O(log m) neighbours and a larger spectral gap than the ring.
"""

from __future__ import annotations

import numpy as np

TOPOLOGIES = ("ring", "exponential")


def adjacency(topology: str, m: int) -> np.ndarray:
    """Boolean [m, m] adjacency (no self loops) of `topology` on m nodes."""
    if m < 2:
        raise ValueError(f"graph: need at least 2 nodes, got m={m}")
    if topology == "ring":
        offsets = [1]
    elif topology == "exponential":
        offsets = [2**k for k in range(m.bit_length()) if 2**k < m]
    else:
        raise ValueError(f"graph: unknown topology {topology!r}; known: {', '.join(TOPOLOGIES)}")
    adj = np.zeros((m, m), dtype=bool)
    for i in range(m):
        for off in offsets:
            adj[i, (i + off) % m] = adj[(i + off) % m, i] = True
    np.fill_diagonal(adj, False)
    return adj


def metropolis_weights(adj: np.ndarray) -> np.ndarray:
    """Symmetric doubly stochastic gossip matrix of an undirected adjacency matrix."""
    deg = adj.sum(axis=1)
    w = np.where(adj, 1.0 / (1.0 + np.maximum(deg[:, None], deg[None, :])), 0.0)
    w[np.diag_indices_from(w)] = 1.0 - w.sum(axis=1)
    return w


def gossip_matrix(topology: str, m: int) -> np.ndarray:
    """The gossip matrix W of `topology` on m nodes."""
    return metropolis_weights(adjacency(topology, m))


def spectral_gap(w: np.ndarray) -> float:
    """1 − |λ_2(W)|: the mixing rate of gossip (0 means the graph does not mix)."""
    eig = np.sort(np.abs(np.linalg.eigvalsh(w)))[::-1]
    return float(1.0 - eig[1])


def degree(topology: str, m: int) -> int:
    """Neighbours per node (every node has the same number on both graphs)."""
    return int(adjacency(topology, m).sum(axis=1).max())
