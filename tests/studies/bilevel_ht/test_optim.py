"""The update rules: tracking invariant, STORM cancellation, step directions, divergence."""

import numpy as np
import pytest

from reprolab.studies.bilevel_ht.graphs import gossip_matrix
from reprolab.studies.bilevel_ht.optim import (
    Method,
    Noise,
    estimate_update,
    run_methods,
    step_direction,
    tracking_update,
)


def test_gradient_tracking_keeps_the_node_mean_of_the_estimates():
    rng = np.random.default_rng(0)
    w = gossip_matrix("ring", 6)
    d = rng.standard_normal((2, 3, 6, 4))
    s = d.copy()
    for _ in range(50):
        d_new = d + rng.standard_t(1.5, d.shape)
        s, d = tracking_update(w, s, d_new, d), d_new
        np.testing.assert_allclose(s.mean(axis=2), d.mean(axis=2), atol=1e-9)


def test_storm_with_a_shared_sample_cancels_the_sample_noise():
    """G(z; ξ) = ∇(z) + ζ_ξ at both points: d^t − ∇(z^t) = (1 − β)(d^{t−1} − ∇(z^{t−1})) + βζ."""
    rng = np.random.default_rng(1)
    beta = 0.2
    grad = [rng.standard_normal(5) for _ in range(4)]
    d = grad[0].copy()  # exact start
    for t in range(1, 4):
        zeta = 1e6 * rng.standard_normal(5)
        g, g_prev = grad[t] + zeta, grad[t - 1] + zeta
        error_before = d - grad[t - 1]
        d = estimate_update(g, g - g_prev, d, beta)
        np.testing.assert_allclose(d - grad[t], (1 - beta) * error_before + beta * zeta)
    # with β = 1 the estimator is the plain sample and with zero noise STORM tracks ∇ exactly
    np.testing.assert_allclose(estimate_update(grad[1], grad[1] - grad[0], grad[0], 1.0), grad[1])
    np.testing.assert_allclose(estimate_update(grad[1], grad[1] - grad[0], grad[0], 0.3), grad[1])


def test_step_directions_raw_clip_normalize():
    s = np.zeros((3, 1, 2, 2))
    s[:, 0, 0] = [3.0, 4.0]  # norm 5
    s[:, 0, 1] = [0.3, 0.4]  # norm 0.5
    mode = np.array([0, 1, 2])[:, None, None, None]
    tau = np.full((3, 1, 1, 1), 1.0)
    out = step_direction(s, mode, tau)
    np.testing.assert_allclose(out[0], s[0])
    np.testing.assert_allclose(np.linalg.norm(out[1], axis=-1), [[1.0, 0.5]])
    np.testing.assert_allclose(np.linalg.norm(out[2], axis=-1), [[1.0, 1.0]])
    np.testing.assert_allclose(step_direction(np.zeros((1, 1, 1, 2)), mode[2:], tau[:1]), 0.0)


def _run(tiny, methods, noises, seed=0, iterations=40):
    return run_methods(
        tiny,
        gossip_matrix("ring", tiny.nodes),
        methods,
        noises,
        iterations=iterations,
        batch=3,
        eval_every=10,
        box=(-3.0, 2.0),
        bound=1e3,
        rng=np.random.default_rng(seed),
    )


def test_large_raw_steps_diverge_under_pareto_noise_while_normalised_steps_do_not(tiny):
    eta = {"x": 5.0, "y": 5.0, "v": 5.0}
    methods = [Method("sgd", "raw", 1.0, 0.0, eta), Method("storm", "normalize", 0.1, 0.0, eta)]
    out = _run(tiny, methods, [Noise("pareto", 1.0, 10.0)])
    assert out["diverged_at"][0] > 0 and out["diverged_at"][1] == -1
    assert np.isnan(out["F"][0, -1]) and np.isfinite(out["F"][1]).all()
    assert out["iter"].tolist() == [0, 10, 20, 30, 40]


def test_small_steps_without_noise_decrease_F_and_runs_are_reproducible(tiny):
    eta = {"x": 0.05, "y": 0.3, "v": 0.3}
    methods = [Method("storm", "normalize", 0.5, 0.0, eta), Method("sgd", "clip", 1.0, 1.0, eta)]
    noises = [Noise("gaussian", 0.0, 0.0), Noise("student_t", 1.5, 0.01)]
    first = _run(tiny, methods, noises, iterations=200)
    assert np.all(first["F"][:, -1] < first["F"][:, 0])
    again = _run(tiny, methods, noises, iterations=200)
    for key in ("F", "gradnorm2", "consensus", "lambda"):
        np.testing.assert_array_equal(first[key], again[key])
    assert np.all(first["lambda"] >= -3.0) and np.all(first["lambda"] <= 2.0)


def test_method_rejects_bad_values():
    eta = {"x": 1.0, "y": 1.0, "v": 1.0}
    with pytest.raises(ValueError, match="method.estimator"):
        Method("adam", "raw", 1.0, 0.0, eta)
    with pytest.raises(ValueError, match="method.beta"):
        Method("storm", "raw", 0.0, 0.0, eta)
    with pytest.raises(ValueError, match="method.eta"):
        Method("sgd", "raw", 1.0, 0.0, {"x": 1.0})
