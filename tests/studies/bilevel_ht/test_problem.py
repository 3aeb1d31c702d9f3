"""The hypergradient, HVP and oracle directions against finite differences and exact solves."""

import numpy as np

from reprolab.studies.bilevel_ht.problem import (
    directions,
    exact_evaluation,
    loss_gradient,
    loss_hvp,
    lower_solution,
    upper_objective,
)

BOX = (-50.0, 50.0)  # wide enough that no bound is active


def test_hypergradient_matches_central_differences_of_F(tiny):
    lam = np.array([[0.3, -0.5, 0.1, 0.8, -1.2]])
    grad = exact_evaluation(tiny, lam, BOX)["hypergradient"][0]
    h = 1e-5
    fd = np.array(
        [
            (upper_objective(tiny, lam + h * e) - upper_objective(tiny, lam - h * e))[0] / (2 * h)
            for e in np.eye(5)
        ]
    )
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-10)
    assert np.abs(grad).max() > 1e-3  # a non-trivial gradient


def test_hvp_matches_finite_differences_of_the_gradient(tiny):
    rng = np.random.default_rng(0)
    w, v = rng.standard_normal((2, 1, 3, 5))
    h = 1e-6
    fd = (
        loss_gradient(tiny.a_train, tiny.b_train, w + h * v)
        - loss_gradient(tiny.a_train, tiny.b_train, w - h * v)
    ) / (2 * h)
    np.testing.assert_allclose(loss_hvp(tiny.a_train, w, v), fd, rtol=1e-6, atol=1e-9)


def test_full_batch_directions_vanish_at_the_exact_solution_and_give_the_hypergradient(tiny):
    lam = np.array([[0.2, -0.4, 0.0, 0.5, 1.0]])
    ev = exact_evaluation(tiny, lam, BOX)
    w_star = ev["w"]
    # v* from the exact (global) system, recomputed through the node oracles: solve H v = ∇f
    x = np.repeat(lam[:, None], 3, axis=1)
    y = np.repeat(w_star[:, None], 3, axis=1)
    full_tr = np.tile(np.arange(6), (3, 1))
    full_va = np.tile(np.arange(5), (3, 1))
    basis = np.eye(5)
    h_cols = [
        directions(tiny, x, y, np.broadcast_to(e, y.shape), full_tr, full_va)[1] for e in basis
    ]
    zero = directions(tiny, x, y, np.zeros_like(y), full_tr, full_va)[1]
    hess = np.stack([(c - zero).mean(axis=1)[0] for c in h_cols], axis=1)
    v_star = np.linalg.solve(hess, -zero.mean(axis=1)[0])
    v = np.broadcast_to(v_star, y.shape)
    g_y, g_v, g_x = directions(tiny, x, y, v, full_tr, full_va)
    np.testing.assert_allclose(g_y.mean(axis=1), 0.0, atol=1e-10)
    np.testing.assert_allclose(g_v.mean(axis=1), 0.0, atol=1e-10)
    np.testing.assert_allclose(g_x.mean(axis=1)[0], ev["hypergradient"][0], rtol=1e-8)


def test_newton_solves_the_lower_level(tiny):
    lam = np.array([[1.0, 0.0, -1.0, 0.5, 0.5], [0.0, 0.0, 0.0, 0.0, 0.0]])
    w = lower_solution(tiny, lam)
    a = tiny.a_train.reshape(-1, 5)[None].repeat(1, 0)
    grad = loss_gradient(a, tiny.b_train.reshape(1, -1), w[:, None])[:, 0] + np.exp(lam) * w
    np.testing.assert_allclose(grad, 0.0, atol=1e-12)


def test_stationarity_is_the_gradient_mapping_at_an_active_bound(tiny):
    lam = np.zeros((1, 5))
    free = exact_evaluation(tiny, lam, BOX)
    np.testing.assert_allclose(free["gradnorm2"], np.sum(free["hypergradient"] ** 2))
    tight = exact_evaluation(tiny, lam, (-1e-12, 1e-12))  # every move is blocked
    assert tight["gradnorm2"][0] < 1e-20 < free["gradnorm2"][0]
    assert 0.0 <= free["accuracy"][0] <= 1.0
