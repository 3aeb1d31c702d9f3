"""Real bundled data split over nodes: sklearn's breast cancer or digits 3-vs-8, no download.

Features are standardised on the whole set, then `noise_features` N(0, 1) columns are appended
(uninformative features, so per-feature regularisation has something to switch off). Labels are
mapped to ±1. Each node gets `n_train` training and `n_val` validation rows with label skew: the
node's share of class +1 is drawn from Beta(α, α) (the two-class Dirichlet(α)), and every row not
used by a node is the common test set. One seed fixes noise columns, skew and split.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits

from reprolab.studies.bilevel_ht.problem import NodeData

DATASETS = ("breast_cancer", "digits38")


def load_dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features [n, d] (float64) and ±1 labels of a bundled sklearn dataset."""
    if name == "breast_cancer":
        bunch = load_breast_cancer()
        return bunch.data.astype(float), np.where(bunch.target == 1, 1.0, -1.0)
    if name == "digits38":
        bunch = load_digits()
        keep = np.isin(bunch.target, (3, 8))
        return bunch.data[keep].astype(float), np.where(bunch.target[keep] == 8, 1.0, -1.0)
    raise ValueError(f"bilevel_ht.data.dataset: unknown {name!r}; known: {', '.join(DATASETS)}")


def standardise(a: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance per column; constant columns (dead pixels) stay zero."""
    std = a.std(axis=0)
    return (a - a.mean(axis=0)) / np.where(std > 0, std, 1.0)


def node_split(params: dict[str, Any], nodes: int, rng: np.random.Generator) -> NodeData:
    """Split the dataset named in `params` over `nodes` nodes (see the module docstring)."""
    a, b = load_dataset(params["dataset"])
    a = standardise(a)
    a = np.hstack([a, rng.standard_normal((a.shape[0], params["noise_features"]))])
    per_node = params["n_train"] + params["n_val"]
    if nodes * per_node >= a.shape[0]:
        raise ValueError(
            f"bilevel_ht.data: {nodes} nodes x {per_node} rows leave no test rows "
            f"({params['dataset']} has {a.shape[0]})"
        )
    pools = {c: list(rng.permutation(np.flatnonzero(b == c))) for c in (1.0, -1.0)}
    rows = []
    for _ in range(nodes):
        share = rng.beta(params["skew_alpha"], params["skew_alpha"])
        n_pos = int(round(share * per_node))
        n_pos = min(max(n_pos, per_node - len(pools[-1.0])), len(pools[1.0]))
        take = [pools[1.0].pop() for _ in range(n_pos)]
        take += [pools[-1.0].pop() for _ in range(per_node - n_pos)]
        rows.append(rng.permutation(np.asarray(take)))
    idx = np.stack(rows)
    train, val = idx[:, : params["n_train"]], idx[:, params["n_train"] :]
    test = np.asarray(sorted(pools[1.0] + pools[-1.0]), dtype=int)
    return NodeData(a[train], b[train], a[val], b[val], a[test], b[test])
