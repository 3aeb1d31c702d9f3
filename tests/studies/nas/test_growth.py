"""Growth fits tell a line from an exponential; the horizon is the first checkpoint under the
threshold, censored when there is none; the long-run score is the last composite."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reprolab.studies.nas.growth import composite, growth_fits, horizon, long_run_score


def test_a_line_fits_linear_growth_and_an_exponential_exponential_growth():
    edits = np.arange(10, 310, 10)
    linear = growth_fits(edits, 5.0 + 0.2 * edits)
    assert linear["r2_linear"] == pytest.approx(1.0) and not linear["exponential"]
    exponential = growth_fits(edits, 2.0 * np.exp(0.015 * edits))
    assert exponential["exponential"] and exponential["r2_exponential"] == pytest.approx(1.0)
    assert exponential["rate"] == pytest.approx(0.015)
    assert exponential["r2_linear"] < 0.95


def test_growth_fits_refuse_too_few_or_non_positive_norms():
    with pytest.raises(ValueError, match="3 points"):
        growth_fits([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        growth_fits([1, 2, 3], [1.0, 0.0, 2.0])


def checkpoint(edits: int, efficacy: float, rest: float = 0.5) -> dict[str, float]:
    return {"edits": edits, "efficacy": efficacy, "generalisation": rest, "specificity": rest}


def test_horizon_is_the_first_checkpoint_under_the_threshold_or_censored():
    run = [checkpoint(10, 1.0), checkpoint(20, 0.6), checkpoint(30, 0.4), checkpoint(40, 0.7)]
    assert horizon(run, 0.5) == (30, False)
    assert horizon(run[:2], 0.5) == (20, True)


def test_the_composite_is_the_harmonic_mean_and_the_long_run_score_the_last_one():
    run = [checkpoint(10, 1.0), checkpoint(20, 0.2, rest=0.5)]
    assert long_run_score(run) == pytest.approx(3 / (1 / 0.2 + 2 / 0.5))
    assert math.isclose(composite(run[0]), 3 / (1 + 2 / 0.5))
    assert composite(checkpoint(30, 0.0, rest=1.0)) == 0.0
