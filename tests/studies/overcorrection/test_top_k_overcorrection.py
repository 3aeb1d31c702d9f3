"""The card's prototype finding as a property: with near-duplicates of the query in the pool,
top-k similarity over-corrects more often as k grows, while the theory-guided rule does not."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.overcorrection.correction import (
    correction,
    label_rates,
    overshoot,
    residual_values,
)
from reprolab.studies.overcorrection.selection import select_theory, select_top_k
from reprolab.studies.overcorrection.toy_world import make_world

ETA = 0.5
KS = (2, 6, 12)


def outcomes(world, select, k: int) -> tuple[float, float]:
    """The over-correction rate and mean squared error (per coordinate) of a selector."""
    kappas, errors = [], []
    for trial in world.trials:
        values = residual_values(trial.x, trial.y, world.prior)
        error0 = world.prior @ trial.x_query - trial.y_query
        chosen = select(trial.x, trial.x_query, k)
        delta = correction(trial.x[chosen], trial.x_query, values[chosen], ETA)
        kappas.append(overshoot(delta, error0))
        errors.append(np.mean((error0 + delta) ** 2))
    return label_rates(np.array(kappas))["over"], float(np.mean(errors))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_k_overcorrects_more_as_k_grows_and_the_theory_rule_does_not(seed):
    world = make_world(np.random.default_rng(seed), 100)
    top_k = [outcomes(world, select_top_k, k) for k in KS]
    theory = [outcomes(world, lambda x, q, k: select_theory(x, q, k, ETA), k) for k in KS]
    over = [rate for rate, _ in top_k]
    assert over[0] < over[1] < over[2] and over[2] > 0.9
    assert top_k[0][1] < top_k[1][1] < top_k[2][1]
    for (rate, mse), (_, top_mse) in zip(theory, top_k, strict=True):
        assert rate <= 0.05 and mse < top_mse
