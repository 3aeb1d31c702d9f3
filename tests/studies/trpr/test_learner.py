"""A routing row through a small DigitStyles stream on a tiny (not pre-trained) ViT: every
measure is filled and repeatable, a trust region that holds every routing is plain MoE, and the
measures of a frozen row are those of its frozen features."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.studies.trpr.backbone import vit_config
from reprolab.studies.trpr.data import StreamSpec, build_images, class_names, make_stream
from reprolab.studies.trpr.learner import Learner, Settings, run_stream
from reprolab.studies.trpr.methods import METHODS, Method

MODEL = {
    "experts": 3,
    "rank": 4,
    "first_adapted": 1,
    "router_temperature": 1.0,
    "experts_per_task": 0,
}
TRAIN = {
    "anchor_temperature": 0.1,
    "epochs": 1,
    "batch_size": 32,
    "logit_scale": 16.0,
    "drift_bins": 2,
}
TUNED = {"lr": 0.01, "delta": 0.05}
TASKS = 5


@pytest.fixture(scope="module")
def stream():
    spec = {"seed": 0, "styles": ["plain"], "split": [0.6, 0.25, 0.15], "shift": 1, "noise": 0.05}
    return make_stream(build_images(StreamSpec.from_params(spec)), class_names(["plain"]), TASKS, 0)


@pytest.fixture(scope="module")
def backbone():
    from transformers import ViTModel

    torch.manual_seed(0)
    return ViTModel(
        vit_config({"hidden": 16, "layers": 2, "heads": 2}), add_pooling_layer=False
    ).eval()


def settings(epochs: int = 1, **tuned: float) -> Settings:
    tuned.setdefault("penalty_weight", 0.0)
    return Settings.from_params(MODEL, {**TRAIN, "epochs": epochs}, {**TUNED, **tuned})


def test_every_row_fills_its_measures_and_repeats(stream, backbone, torch_one_thread):
    for name, method in METHODS.items():
        first = run_stream(method, backbone, stream, settings(), seed=1)
        again = run_stream(method, backbone, stream, settings(), seed=1)
        matrix = first["matrix"]
        assert np.array_equal(matrix, again["matrix"], equal_nan=True), name
        assert (
            not np.isnan(np.tril(matrix)).any()
            and np.isnan(matrix[np.triu_indices(TASKS, 1)]).all()
        )
        assert 0.0 <= first["final"] <= 1.0 and 0.0 <= first["task_identification"] <= 1.0
        if method.routes:
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
    own = Settings.from_params(
        {**MODEL, "experts": 10, "experts_per_task": 2}, TRAIN | {"epochs": 1}, TUNED
    )
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
            Settings.from_params({**MODEL, "experts": 5, "experts_per_task": 2}, TRAIN, TUNED),
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
    assert plain["drift"] == unweighted["drift"]
    weighted = run_stream(METHODS[row], backbone, stream, settings(penalty_weight=weight), seed=7)
    assert weighted["drift"] != plain["drift"]  # the routing moved differently


def test_a_single_adapter_trains_expert_zero_through_every_task(stream, backbone, torch_one_thread):
    learner = Learner(METHODS["adapter_ft"], backbone, stream, settings(), seed=8)
    own = Learner(METHODS["moe"], backbone, stream, settings(), seed=8)
    adapter = learner.model.adapters[0]
    for task in range(2):
        before = adapter.up.detach().clone()
        learner.train_task(task)
        assert not torch.equal(adapter.up[0], before[0])  # expert 0 learns every task
        assert torch.equal(adapter.up[1:], before[1:])  # the others never take a step
    per_expert = adapter.down[0].numel() + adapter.up[0].numel()
    assert learner.trainable_parameters() == per_expert * len(learner.model.adapters)
    assert own.trainable_parameters() > 3 * learner.trainable_parameters()


@pytest.mark.parametrize(("bias", "expected"), [(50.0, "p"), (-50.0, "q")])
def test_the_fusion_mixes_instance_and_projected_routing_by_the_gate(bias, expected):
    from reprolab.studies.trpr.adapters import FusionGate
    from reprolab.studies.trpr.learner import routing
    from reprolab.studies.trpr.projection import project

    torch.manual_seed(0)
    log_p = torch.log_softmax(torch.randn(6, 4), -1)
    log_anchor = torch.log_softmax(torch.randn(6, 4), -1)
    weights = routing(METHODS["trpr_card"], FusionGate(8, bias), log_anchor[None], 0.01)
    mixed = weights(0, log_p, torch.randn(6, 8))
    assert mixed.shape == (6, 4) and torch.allclose(mixed.sum(-1), torch.ones(6))
    target = log_p.exp() if expected == "p" else project(log_p, log_anchor, 0.01).exp()
    assert torch.allclose(mixed, target, atol=1e-6)  # γ = 1: plain MoE; γ = 0: projection
