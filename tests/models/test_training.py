"""The shared training loops: the language models' schedule warms up then decays to a tenth and the
loop logs windowed losses of a model that learns; `fit` lowers a loss and stops a diverged run."""

from __future__ import annotations

import logging
import math

import pytest
import torch

from reprolab.models.training import (
    Diverged,
    fit,
    score_unless_diverged,
    train_steps,
    warmup_cosine,
)


def test_the_learning_rate_warms_up_then_decays_to_a_tenth():
    rates = [warmup_cosine(step, 100, 1.0) for step in range(100)]
    assert rates[0] == pytest.approx(0.2) and rates[4] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(rates[4:], rates[5:], strict=False))
    assert rates[-1] == pytest.approx(0.1, abs=1e-3)


class Regression(torch.nn.Module):
    """A linear model whose forward returns an object with the squared error as `loss`."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 1)

    def forward(self, x, y):
        return type("Output", (), {"loss": ((self.linear(x) - y) ** 2).mean()})()


def test_the_loop_logs_a_loss_per_window_and_the_model_learns():
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]])
    losses = train_steps(Regression(), lambda: {"x": x, "y": y}, 100, 0.1, 40, "test", False)
    assert len(losses) == 3 and losses[-1] < 0.1 * losses[0]


def test_fit_lowers_a_quadratic_and_logs_every_window():
    weight = torch.nn.Parameter(torch.tensor([3.0]))
    curve = fit([weight], lambda: (weight**2).sum(), steps=10, lr=0.5, desc="q", log_every=4)
    assert len(curve) == 3 and curve[-1] < curve[0]


def test_a_non_finite_loss_stops_the_run_by_name():
    weight = torch.nn.Parameter(torch.tensor([1.0]))
    with pytest.raises(Diverged, match="blow-up: loss .* at step 0"):
        fit([weight], lambda: weight * float("inf"), steps=3, lr=0.1, desc="blow-up", log_every=1)


def test_a_diverged_score_is_nan_and_logged(caplog):
    log = logging.getLogger("tune")

    def diverges() -> float:
        raise Diverged("fm: loss nan at step 3 (lr 0.1)")

    assert math.isnan(score_unless_diverged(diverges, log))
    assert "loss nan at step 3" in caplog.text
    assert score_unless_diverged(lambda: 0.25, log) == 0.25
