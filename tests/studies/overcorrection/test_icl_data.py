"""The in-context regression data: every prompt has its own map around the prior, the targets are
noiseless, the shifted world sits `shift` away from the prior and its pools are the toy's."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.overcorrection.icl_data import (
    draw_prior,
    shifted_trials,
    shifted_world,
    training_prompts,
)

PRIOR = draw_prior(np.random.default_rng(0))


def test_prompts_have_the_asked_shapes_and_an_empty_context_is_allowed():
    prompts = training_prompts(np.random.default_rng(1), PRIOR, 5, 3, 0.5, 0.1)
    assert PRIOR.shape == (4, 8)
    assert prompts.x.shape == (5, 3, 8) and prompts.y.shape == (5, 3, 4)
    assert prompts.x_query.shape == (5, 8) and prompts.y_query.shape == (5, 4)
    empty = training_prompts(np.random.default_rng(1), PRIOR, 5, 0, 0.5, 0.1)
    assert empty.x.shape == (5, 0, 8) and empty.y.shape == (5, 0, 4)
    wide = draw_prior(np.random.default_rng(0), dim=3, outputs=2)
    assert training_prompts(np.random.default_rng(1), wide, 2, 4, 0.5, 0.1).y.shape == (2, 4, 2)


def test_each_prompt_has_its_own_map_spread_sigma_around_the_prior():
    prompts = training_prompts(np.random.default_rng(2), PRIOR, 400, 10, 0.5, 0.0)
    solved = [np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(*prompts[:2], strict=True)]
    maps = np.stack(solved).transpose(0, 2, 1)
    np.testing.assert_allclose(np.einsum("bpd,bd->bp", maps, prompts.x_query), prompts.y_query)
    assert (maps - PRIOR).std() == pytest.approx(0.5, rel=0.05)
    assert np.abs((maps - PRIOR).mean(0)).max() < 0.15


def test_items_carry_noise_and_targets_do_not():
    rigid = training_prompts(np.random.default_rng(3), PRIOR, 300, 6, 0.0, 0.2)
    np.testing.assert_allclose(rigid.y_query, rigid.x_query @ PRIOR.T, atol=1e-14)
    gaps = rigid.y - rigid.x @ PRIOR.T
    assert gaps.std() == pytest.approx(0.2, rel=0.05)
    assert (rigid.x**2).sum(-1).mean() == pytest.approx(1.0, rel=0.05)


def test_the_same_generator_state_gives_the_same_prompts():
    one, two = (training_prompts(np.random.default_rng(4), PRIOR, 3, 2, 0.5, 0.1) for _ in "ab")
    for a, b in zip(one, two, strict=True):
        assert np.array_equal(a, b)
    other = training_prompts(np.random.default_rng(5), PRIOR, 3, 2, 0.5, 0.1)
    assert not np.array_equal(one.x, other.x)


def test_the_shifted_world_is_shift_away_from_the_prior_and_its_pools_answer_by_it():
    big = draw_prior(np.random.default_rng(6), dim=40, outputs=40)
    assert (shifted_world(np.random.default_rng(7), big, 1.5) - big).std() == pytest.approx(
        1.5, rel=0.05
    )
    truth = shifted_world(np.random.default_rng(7), PRIOR, 1.5)
    trials = shifted_trials(np.random.default_rng(8), truth, 4, pool=20, duplicates=0.5)
    assert len(trials) == 4
    for trial in trials:
        assert trial.x.shape == (20, 8) and trial.duplicate.sum() == 10
        np.testing.assert_allclose(trial.y, trial.x @ truth.T, atol=1e-14)
        np.testing.assert_allclose(trial.y_query, truth @ trial.x_query, atol=1e-14)
    with pytest.raises(ValueError, match="duplicate share"):
        shifted_trials(np.random.default_rng(8), truth, 1, duplicates=1.5)
