"""Gossip matrices: doubly stochastic, symmetric, mixing; the exponential graph mixes faster."""

import numpy as np
import pytest

from reprolab.studies.bilevel_ht.graphs import degree, gossip_matrix, spectral_gap


@pytest.mark.parametrize("topology", ["ring", "exponential"])
@pytest.mark.parametrize("m", [3, 8, 16])
def test_gossip_matrix_is_doubly_stochastic_symmetric_and_mixing(topology, m):
    w = gossip_matrix(topology, m)
    np.testing.assert_allclose(w.sum(axis=0), 1.0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    np.testing.assert_array_equal(w, w.T)
    assert w.min() >= 0.0 and spectral_gap(w) > 0.0
    z = np.random.default_rng(0).standard_normal((m, 4))
    mixed = np.linalg.matrix_power(w, 400) @ z
    np.testing.assert_allclose(mixed, np.broadcast_to(z.mean(axis=0), z.shape), atol=1e-8)


def test_ring_weights_are_one_third_and_exponential_has_log_degree():
    ring = gossip_matrix("ring", 8)
    np.testing.assert_allclose(ring[0, [7, 0, 1]], 1 / 3)
    assert ring[0, 4] == 0.0
    assert degree("ring", 8) == 2 and degree("exponential", 8) == 5  # ±1, ±2, +4 = -4
    assert spectral_gap(gossip_matrix("exponential", 8)) > spectral_gap(ring)


def test_unknown_topology_is_named():
    with pytest.raises(ValueError, match="unknown topology 'star'"):
        gossip_matrix("star", 8)
