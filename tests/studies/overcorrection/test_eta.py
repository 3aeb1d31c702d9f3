"""η̂: the least-squares fits recover planted scales (one pooled, one per head), and on tuning
prompts they recover a linear reader's true scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.core.determinism import seed_everything
from reprolab.studies.overcorrection.correction import r_squared
from reprolab.studies.overcorrection.eta import (
    fit_eta,
    fit_head_etas,
    head_regressors,
    tuning_sample,
)
from reprolab.studies.overcorrection.icl_data import draw_prior
from reprolab.studies.overcorrection.readers import LinearAttentionReader


def planted(heads: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random (30, 5, 8) keys, (30, 8) queries and (30, 5, 3) residuals."""
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((30, 5, 8)),
        rng.standard_normal((30, 8)),
        rng.standard_normal((30, 5, 3)),
    )


def test_head_regressors_sum_each_heads_scores_times_the_residuals():
    keys, query, residuals = planted(2)
    regressors = head_regressors(keys, query, residuals, 2)
    assert regressors.shape == (30, 3, 2)
    by_hand = sum(float(keys[7, k, 4:] @ query[7, 4:]) * residuals[7, k] for k in range(5))
    np.testing.assert_allclose(regressors[7, :, 1], by_hand)


def test_fit_eta_recovers_a_planted_scale_through_noise():
    keys, query, residuals = planted(1, seed=1)
    regressors = head_regressors(keys, query, residuals, 1)
    noise = 0.05 * np.random.default_rng(2).standard_normal((30, 3))
    assert fit_eta(regressors, -0.37 * regressors[..., 0]) == pytest.approx(-0.37, abs=1e-12)
    assert fit_eta(regressors, -0.37 * regressors[..., 0] + noise) == pytest.approx(-0.37, abs=0.01)


def test_per_head_etas_recover_planted_heads_where_one_pooled_eta_cannot():
    keys, query, residuals = planted(4, seed=3)
    regressors = head_regressors(keys, query, residuals, 4)
    etas = np.array([0.3, -0.5, 1.0, 0.0])
    deltas = regressors @ etas
    np.testing.assert_allclose(fit_head_etas(regressors, deltas), etas, atol=1e-12)
    pooled = fit_eta(regressors, deltas)
    assert r_squared(pooled * regressors.sum(-1), deltas) < 0.5
    equal_heads = regressors @ np.full(4, 0.2)
    assert fit_eta(regressors, equal_heads) == pytest.approx(0.2, abs=1e-12)


def test_tuning_prompts_recover_a_linear_readers_true_scale():
    seed_everything(0, 1)
    reader = LinearAttentionReader()
    with torch.no_grad():
        reader.w_value.copy_(0.45 * torch.cat([-reader.skip, torch.eye(4)], 1))
    prior = draw_prior(np.random.default_rng(0))
    regressors, deltas = tuning_sample(
        reader, np.random.default_rng(1), prior, 0.5, 0.1, range(1, 5), 20
    )
    assert regressors.shape == (80, 4, 1) and deltas.shape == (80, 4)
    assert fit_eta(regressors, deltas) == pytest.approx(0.45, abs=1e-4)
    assert fit_head_etas(regressors, deltas)[0] == pytest.approx(0.45, abs=1e-4)
