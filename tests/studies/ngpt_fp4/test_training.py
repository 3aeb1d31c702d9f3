"""A GPT or nGPT run: batches, schedule, spikes, the record, and repeatability."""

from __future__ import annotations

import pytest
import torch

from reprolab.core.determinism import seed_everything
from reprolab.models.training import warmup_cosine
from reprolab.studies.ngpt_fp4.models import CharLM, LMConfig
from reprolab.studies.ngpt_fp4.nvfp4 import recipe_named
from reprolab.studies.ngpt_fp4.training import Schedule, spikes, train, windows

pytestmark = pytest.mark.usefixtures("torch_one_thread")
STREAM = torch.arange(400) % 7  # a periodic "text" a model learns quickly
SCHEDULE = Schedule(steps=40, batch=4, lr=1e-2, weight_decay=0.1, log_every=10)


def run(normalized: bool, recipe: str = "fp32"):
    seed_everything(0, 1)
    model = CharLM(
        LMConfig(vocab=7, hidden=32, layers=1, heads=2, context=16, normalized=normalized)
    )
    model.set_recipe(recipe_named(recipe, 16.0))
    return model, train(model, STREAM, STREAM, SCHEDULE, seed=3, val_batches=2)


def test_windows_are_inputs_and_their_next_tokens():
    inputs, targets = windows(torch.arange(100), 5, 8, torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (5, 8)
    assert torch.equal(targets[:, :-1], inputs[:, 1:]) and torch.equal(targets, inputs + 1)


def test_the_rate_warms_up_for_gpt_only_and_decays_to_a_tenth():
    assert warmup_cosine(0, 100, 1.0) == pytest.approx(0.2)
    assert warmup_cosine(0, 100, 1.0, warmup=False) == pytest.approx(1.0)
    assert warmup_cosine(100, 100, 1.0, warmup=False) == pytest.approx(0.1)


def test_a_planted_spike_is_found_and_noise_is_not():
    noise = torch.Generator().manual_seed(0)
    losses = (2.0 + 0.01 * torch.randn(200, generator=noise)).tolist()
    assert spikes(losses) == []
    losses[120] = 2.5
    assert spikes(losses) == [120]


@pytest.mark.parametrize("normalized", [False, True])
def test_a_run_learns_records_itself_and_repeats(normalized: bool):
    model, record = run(normalized, "nvfp4")
    assert len(record.losses) == 4 and record.losses[-1] < 0.5 * record.losses[0]
    assert record.val_loss < record.losses[0]
    assert set(record.max_gradients) == {
        name
        for name, _ in model.named_modules()
        if name.startswith("blocks.") and name.rsplit(".", 1)[-1] in ("qkv", "out", "up", "down")
    }
    assert all(value > 0 for value in record.max_gradients.values())
    assert run(normalized, "nvfp4")[1] == record
