"""A routing row through a small DigitStyles stream on a tiny (not pre-trained) ViT: every
measure is filled and repeatable, a trust region that holds every routing is plain MoE, and the
measures of a frozen row are those of its frozen features."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.studies.trpr.backbone import vit_config
from reprolab.studies.trpr.data import StreamSpec, build_stream
from reprolab.studies.trpr.learner import Learner, Settings, run_stream
from reprolab.studies.trpr.methods import METHODS, Method

MODEL = {"experts": 3, "rank": 4, "first_adapted": 1, "router_temperature": 1.0}
TRAIN = {
    "delta": 0.05,
    "anchor_temperature": 0.1,
    "epochs": 1,
    "batch_size": 32,
    "lr": 0.01,
    "logit_scale": 16.0,
    "drift_bins": 2,
}


@pytest.fixture(scope="module")
def stream():
    spec = {
        "seed": 0,
        "styles": ["plain", "invert"],
        "tasks": 3,
        "classes_per_task": 2,
        "split": [0.6, 0.25, 0.15],
        "shift": 1,
        "noise": 0.05,
    }
    return build_stream(StreamSpec.from_params(spec))


@pytest.fixture(scope="module")
def backbone():
    from transformers import ViTModel

    torch.manual_seed(0)
    return ViTModel(
        vit_config({"hidden": 16, "layers": 2, "heads": 2}), add_pooling_layer=False
    ).eval()


def settings(**train) -> Settings:
    return Settings.from_params(MODEL, {**TRAIN, **train})


def test_every_row_fills_its_measures_and_repeats(stream, backbone, torch_one_thread):
    for name, method in METHODS.items():
        first = run_stream(method, backbone, stream, settings(), seed=1)
        again = run_stream(method, backbone, stream, settings(), seed=1)
        matrix = first["matrix"]
        assert np.array_equal(matrix, again["matrix"], equal_nan=True), name
        assert not np.isnan(np.tril(matrix)).any() and np.isnan(matrix[np.triu_indices(3, 1)]).all()
        assert 0.0 <= first["final"] <= 1.0 and 0.0 <= first["task_identification"] <= 1.0
        if method.adapters:
            assert first["drift"] >= 0.0 and len(first["drift_bins"]["loss_rate"]) == 2
            assert 0.0 <= first["restored_accuracy"] <= 1.0
        assert ("gate_old" in first) == method.gate


def test_a_trust_region_that_holds_every_routing_is_plain_moe(stream, backbone, torch_one_thread):
    wide = Method(anchor="mean", infer_projection=True)
    plain = run_stream(METHODS["moe"], backbone, stream, settings(epochs=3), seed=2)
    projected = run_stream(wide, backbone, stream, settings(epochs=3, delta=1e6), seed=2)
    assert np.array_equal(plain["matrix"], projected["matrix"], equal_nan=True)
    assert plain["drift"] == projected["drift"] > 0.0
    narrow = run_stream(wide, backbone, stream, settings(epochs=3, delta=1e-6), seed=2)
    assert narrow["drift"] < plain["drift"]  # routing held near the anchors drifts less


def test_a_frozen_row_never_forgets_what_its_features_told_apart(stream, backbone):
    frozen = run_stream(METHODS["ncm"], backbone, stream, settings(), seed=3)
    assert "drift" not in frozen
    again = run_stream(METHODS["ncm"], backbone, stream, settings(), seed=4)
    assert np.array_equal(frozen["matrix"], again["matrix"], equal_nan=True)  # nothing trains


def test_experts_of_finished_tasks_stay_as_they_were(stream, backbone, torch_one_thread):
    own = Settings.from_params({**MODEL, "experts": 6, "experts_per_task": 2}, TRAIN)
    learner = Learner(METHODS["moe"], backbone, stream, own, seed=5)
    learner.train_task(0)
    adapter = learner.model.adapters[0]
    after_first = (adapter.down.detach().clone(), adapter.up.detach().clone())
    router = adapter.router.weight.detach().clone()
    learner.train_task(1)
    assert torch.equal(adapter.down[:2], after_first[0][:2])
    assert torch.equal(adapter.up[:2], after_first[1][:2])
    assert not torch.equal(adapter.up[2:4], after_first[1][2:4])  # task 1's own experts train
    assert torch.equal(adapter.up[4:], torch.zeros_like(adapter.up[4:]))  # task 2's wait
    assert not torch.equal(adapter.router.weight, router)  # the shared router keeps training
    with pytest.raises(ValueError, match="expected their product"):
        Learner(
            METHODS["moe"],
            backbone,
            stream,
            Settings.from_params({**MODEL, "experts": 5, "experts_per_task": 2}, TRAIN),
            seed=5,
        )


def test_a_frozen_router_keeps_the_first_tasks_routing(stream, backbone, torch_one_thread):
    learner = Learner(METHODS["frozen_router"], backbone, stream, settings(), seed=6)
    learner.train_task(0)
    router = learner.model.adapters[0].router.weight.detach().clone()
    up = learner.model.adapters[0].up.detach().clone()
    learner.train_task(1)
    assert torch.equal(learner.model.adapters[0].router.weight, router)
    assert not torch.equal(learner.model.adapters[0].up, up)  # the experts still train


@pytest.mark.parametrize(("row", "weight"), [("router_kl", 50.0), ("lwf", 50.0), ("ewc", 1e6)])
def test_a_penalty_weighs_nothing_at_zero_and_changes_the_stream_otherwise(
    row, weight, stream, backbone, torch_one_thread
):
    plain = run_stream(METHODS["moe"], backbone, stream, settings(), seed=7)
    unweighted = run_stream(METHODS[row], backbone, stream, settings(), seed=7)
    assert np.array_equal(plain["matrix"], unweighted["matrix"], equal_nan=True)
    weighted = run_stream(METHODS[row], backbone, stream, settings(penalty_weight=weight), seed=7)
    assert not np.array_equal(plain["matrix"], weighted["matrix"], equal_nan=True)
