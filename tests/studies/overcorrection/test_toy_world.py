"""The toy world: shapes, the near-duplicates of the query, noiseless or noisy answers, and the
same world from the same seed."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.overcorrection.toy_world import make_world


def test_a_world_has_the_card_sizes_and_a_shuffled_share_of_duplicates():
    world = make_world(np.random.default_rng(0), 20)
    assert world.prior.shape == world.truth.shape == (4, 8) and len(world.trials) == 20
    positions = []
    for trial in world.trials:
        assert trial.x.shape == (60, 8) and trial.y.shape == (60, 4)
        assert trial.x_query.shape == (8,) and trial.y_query.shape == (4,)
        assert trial.duplicate.sum() == 18
        gaps = np.linalg.norm(trial.x - trial.x_query, axis=1)
        assert gaps[trial.duplicate].max() < 0.3 < gaps[~trial.duplicate].min()
        positions.extend(np.flatnonzero(trial.duplicate).tolist())
    assert max(positions) > 30


def test_answers_are_the_truths_unless_noise_is_asked_for():
    world = make_world(np.random.default_rng(1), 5, dim=6, outputs=3, pool=40, duplicates=0.5)
    for trial in world.trials:
        np.testing.assert_allclose(trial.y, trial.x @ world.truth.T, atol=1e-14)
        np.testing.assert_allclose(trial.y_query, world.truth @ trial.x_query, atol=1e-14)
        assert trial.duplicate.sum() == 20
    noisy = make_world(np.random.default_rng(1), 50, noise=0.5)
    gaps = np.concatenate([t.y - t.x @ noisy.truth.T for t in noisy.trials])
    assert gaps.std() == pytest.approx(0.5, rel=0.05)
    trial = noisy.trials[0]
    np.testing.assert_allclose(trial.y_query, noisy.truth @ trial.x_query, atol=1e-14)


def test_the_same_seed_gives_the_same_world():
    one, two = (make_world(np.random.default_rng(4), 3) for _ in range(2))
    other = make_world(np.random.default_rng(5), 3)
    assert np.array_equal(one.prior, two.prior) and np.array_equal(one.truth, two.truth)
    for a, b in zip(one.trials, two.trials, strict=True):
        assert np.array_equal(a.x, b.x) and np.array_equal(a.duplicate, b.duplicate)
    assert not np.array_equal(one.trials[0].x, other.trials[0].x)


def test_inputs_have_unit_mean_square_norm_and_the_duplicate_share_is_checked():
    world = make_world(np.random.default_rng(2), 50, duplicates=0.0)
    norms = np.concatenate([np.sum(t.x**2, axis=1) for t in world.trials])
    assert norms.mean() == pytest.approx(1.0, rel=0.05)
    assert not any(t.duplicate.any() for t in world.trials)
    with pytest.raises(ValueError, match="duplicate share"):
        make_world(np.random.default_rng(0), 1, duplicates=1.5)
