"""Projections onto the box and the simplex: constructed cases and the optimality conditions."""

import numpy as np
import pytest

from reprolab.studies.pem.domains import domain_center, project_box, project_simplex, projection


def test_simplex_projection_on_constructed_points():
    u = np.array([[0.5, 0.5, 0.5], [2.0, 0.0, 0.0], [0.6, 0.6, -1.0], [0.2, 0.3, 0.5]])
    expected = np.array([[1 / 3] * 3, [1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    np.testing.assert_allclose(project_simplex(u), expected, atol=1e-12)


@pytest.mark.parametrize("domain", ["box", "simplex"])
def test_projection_satisfies_the_variational_inequality(domain):
    # y = Π(u) iff y is feasible and (u - y)·(z - y) <= 0 for every feasible z
    rng = np.random.default_rng(0)
    u = 2.0 * rng.standard_normal((200, 4))
    y = projection(domain)(u)
    if domain == "box":
        z = rng.uniform(size=(200, 50, 4))
        assert y.min() >= 0 and y.max() <= 1
    else:
        z = rng.dirichlet(np.ones(4), size=(200, 50))
        assert y.min() >= 0
        np.testing.assert_allclose(y.sum(axis=1), 1.0, atol=1e-12)
    inner = np.einsum("nk,nzk->nz", u - y, z - y[:, None, :])
    assert inner.max() <= 1e-10


def test_box_projection_clips_and_the_simplex_kkt_threshold_is_shared():
    np.testing.assert_array_equal(project_box(np.array([[-1.0, 0.3, 4.0]])), [[0.0, 0.3, 1.0]])
    u = np.array([[3.0, 1.0, 0.2, -2.0]])
    y = project_simplex(u)
    support = y[0] > 0
    theta = (u[0] - y[0])[support]
    np.testing.assert_allclose(theta, theta[0])  # one multiplier on the support
    assert np.all(u[0][~support] <= theta[0])  # off the support u_i - θ <= 0


def test_unknown_domain_is_named_and_centres_lie_inside():
    with pytest.raises(ValueError, match="unknown domain 'sphere'"):
        projection("sphere")
    np.testing.assert_allclose(domain_center("simplex", 4).sum(), 1.0)
    np.testing.assert_array_equal(domain_center("box", 2), [0.5, 0.5])
