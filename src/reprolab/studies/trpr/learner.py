"""One routing row trained through the DigitStyles stream, task by task, and measured.

Per task: a cosine classifier over the task's classes (local cross-entropy: the head never
compares classes of different tasks) trains the adapters (and the gate) for `epochs` epochs,
mixing experts as the row's `Method` says (`routing`). At the end of the task each of its
classes gets
* its anchor: the mean routing of its training images (`mean`), or the moving average kept
  while it trained (`ema`);
* its frozen prototype (the backbone's feature, for the soft anchor) and its adapted prototype
  (the mean unit-normalised feature under the row's inference routing).
Inference is the nearest adapted prototype among every class seen so far, with the card's
reasoning: a prototype head measures drift of representations and routing, not head bias.

After every task the test images of every seen task are classified (the accuracy matrix). At
the end, for the images of old tasks: routing drift between the end of their task and the end
(the weights the experts were actually mixed with), the net loss per drift bin, the routing
restore (each image classified again with the weights it had at the end of its task, under the
final experts: how much of the loss the routing's drift explains), the gate's value and the soft
anchor's task identification.

With `experts_per_task` K (the MoE-Adapters4CL arrangement, where the design card's prototype
and this study's exploration found routing drift to be what forgets), each task trains its own
K experts and leaves the others as they are; every router is shared and trains on every task.

Choices: the frozen blocks' outputs are computed once (`FrozenViT.stem`); batches are drawn by a
generator of the seed, and the adapters' initialisation under `torch.manual_seed(seed)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from transformers import ViTModel

from reprolab.core.determinism import derive_seed
from reprolab.studies.trpr.adapters import FrozenViT, FusionGate, Weights, frozen_stem
from reprolab.studies.trpr.anchors import ema_anchor, mean_anchor, soft_anchor, task_identification
from reprolab.studies.trpr.backbone import pixels
from reprolab.studies.trpr.data import Stream
from reprolab.studies.trpr.methods import Method
from reprolab.studies.trpr.metrics import drift_quantile_losses, routing_drift, stream_summary
from reprolab.studies.trpr.penalties import EWC, FeatureDistillation, RouterKL
from reprolab.studies.trpr.projection import project


@dataclass(frozen=True)
class Settings:
    """The learner's constants (params `trpr.model` and `trpr.train`) and a row's tuned values
    (`lr`, `delta`, `penalty_weight`: 0 where the row has no such setting, see Method.knob)."""

    experts: int
    rank: int
    first_adapted: int
    router_temperature: float
    experts_per_task: int
    anchor_temperature: float
    epochs: int
    batch_size: int
    logit_scale: float
    drift_bins: int
    lr: float = 0.0
    delta: float = 0.0
    penalty_weight: float = 0.0

    @classmethod
    def from_params(
        cls, model: Mapping[str, Any], train: Mapping[str, Any], tuned: Mapping[str, Any]
    ) -> Settings:
        return cls(
            experts=int(model["experts"]),
            rank=int(model["rank"]),
            first_adapted=int(model["first_adapted"]),
            router_temperature=float(model["router_temperature"]),
            experts_per_task=int(model["experts_per_task"]),
            anchor_temperature=float(train["anchor_temperature"]),
            epochs=int(train["epochs"]),
            batch_size=int(train["batch_size"]),
            logit_scale=float(train["logit_scale"]),
            drift_bins=int(train["drift_bins"]),
            **{key: float(value) for key, value in tuned.items()},
        )


def _mixing(
    log_p: torch.Tensor, log_anchor: torch.Tensor | None, gamma: torch.Tensor | None, delta: float
) -> torch.Tensor:
    """The expert weights: p without an anchor; else the projection q of p around it, fused
    with p by the gate's γ when there is a gate."""
    if log_anchor is None:
        return log_p.exp()
    q = project(log_p, log_anchor, delta).exp()
    return q if gamma is None else gamma[:, None] * log_p.exp() + (1 - gamma[:, None]) * q


def routing(
    method: Method, gate: FusionGate | None, log_anchors: torch.Tensor | None, delta: float
) -> Weights:
    """The weights function of the adapted blocks for anchors `log_anchors` [A, B, E] (None:
    plain routing)."""

    def weights(index: int, log_p: torch.Tensor, cls: torch.Tensor) -> torch.Tensor:
        if method.single_expert:
            return F.one_hot(torch.zeros(len(log_p), dtype=torch.long), log_p.shape[-1]).to(log_p)
        anchor = None if log_anchors is None else log_anchors[index]
        gamma = gate(cls) if gate is not None and anchor is not None else None
        return _mixing(log_p, anchor, gamma, delta)

    return weights


def cosine_logits(features: torch.Tensor, head: torch.Tensor, scale: float) -> torch.Tensor:
    """[B, K] a task head's logits: `scale` × the cosine of each feature [B, D] with each of
    the head's K class weights [K, D]."""
    return scale * F.normalize(features, dim=-1) @ F.normalize(head, dim=-1).T


def frozen_features(backbone: ViTModel, images: np.ndarray) -> torch.Tensor:
    """[N, D] final class tokens of the frozen backbone: NCM's features and the soft anchor's."""
    with torch.no_grad():
        return backbone(pixel_values=pixels(images)).last_hidden_state[:, 0]


@dataclass(frozen=True)
class FrozenInputs:
    """What the frozen backbone makes of a stream's training and test images, the same for
    every row: the hidden states entering the first adapted block (`FrozenViT.stem`) and the
    final class tokens (`frozen_features`). Computed once per stream and shared by its rows."""

    train_stem: torch.Tensor
    test_stem: torch.Tensor
    train_features: torch.Tensor
    test_features: torch.Tensor

    @classmethod
    def of(cls, backbone: ViTModel, stream: Stream, first_adapted: int) -> FrozenInputs:
        return cls(
            train_stem=frozen_stem(backbone, first_adapted, pixels(stream.train_images)),
            test_stem=frozen_stem(backbone, first_adapted, pixels(stream.test_images)),
            train_features=frozen_features(backbone, stream.train_images),
            test_features=frozen_features(backbone, stream.test_images),
        )


class Learner:
    """The state of one row through the stream: model, gate, and per class its anchor and
    prototypes."""

    def __init__(
        self,
        method: Method,
        backbone: ViTModel,
        stream: Stream,
        settings: Settings,
        seed: int,
        frozen: FrozenInputs | None = None,
    ) -> None:
        tasks = len(stream.task_classes)
        if settings.experts_per_task and settings.experts != tasks * settings.experts_per_task:
            raise ValueError(
                f"trpr.model: {settings.experts} experts for {tasks} tasks × "
                f"experts_per_task {settings.experts_per_task}: expected their product"
            )
        torch.manual_seed(seed)
        self.method, self.stream, self.settings, self.seed = method, stream, settings, seed
        self.model = FrozenViT(
            backbone,
            settings.first_adapted,
            settings.experts,
            settings.rank,
            settings.router_temperature,
        )
        dim = backbone.config.hidden_size
        self.gate = FusionGate(dim) if method.gate else None
        if frozen is None:
            frozen = FrozenInputs.of(backbone, stream, settings.first_adapted)
        self.train_stem, self.test_stem = frozen.train_stem, frozen.test_stem
        self.train_frozen, self.test_frozen = frozen.train_features, frozen.test_features
        self.ewc = EWC()
        self.anchors: dict[int, torch.Tensor] = {}
        self.frozen_prototypes: dict[int, torch.Tensor] = {}
        self.prototypes: dict[int, torch.Tensor] = {}

    def trainable_parameters(self) -> int:
        """The parameters the row trains: per adapted block the experts it uses (one for a
        single-expert row, all of them otherwise) and the router of a routed row; the gate."""
        if not self.method.adapters:
            return 0
        count = 0
        for adapter in self.model.adapters:
            expert = adapter.down[0].numel() + adapter.up[0].numel()
            if self.method.single_expert:
                count += expert
            else:
                count += expert * adapter.experts
                count += sum(w.numel() for w in adapter.router.parameters())
        if self.gate is not None:
            count += sum(w.numel() for w in self.gate.parameters())
        return count

    def inference_weights(self, frozen: torch.Tensor) -> Weights:
        """The row's routing at inference for images with frozen features `frozen`."""
        if not self.method.infer_projection or not self.anchors:
            return routing(self.method, None, None, self.settings.delta)
        classes = sorted(self.anchors)
        log_anchor = soft_anchor(
            frozen,
            torch.stack([self.frozen_prototypes[c] for c in classes]),
            torch.stack([self.anchors[c] for c in classes]),
            self.settings.anchor_temperature,
        )
        return routing(self.method, self.gate, log_anchor, self.settings.delta)

    def features(self, stem: torch.Tensor, frozen: torch.Tensor) -> torch.Tensor:
        """Inference features: frozen for a row without adapters, else the adapted ones."""
        if not self.method.adapters:
            return frozen
        with torch.no_grad():
            return self.model.head(stem, self.inference_weights(frozen)).features

    def train_task(self, task: int) -> None:
        """Train on task `task`'s classes, then record their anchors and prototypes."""
        classes = torch.from_numpy(np.sort(self.stream.task_classes[task]))
        labels = torch.from_numpy(self.stream.train_labels)
        images = torch.isin(labels, classes).nonzero()[:, 0]
        ema: dict[int, torch.Tensor | None] = {int(c): None for c in classes}
        if self.method.adapters:
            ema = self._fit(task, classes, images, ema)
        with torch.no_grad():
            plain = self.model.head(
                self.train_stem[images], routing(self.method, None, None, self.settings.delta)
            )
        for c in classes.tolist():
            mine = labels[images] == c
            self.frozen_prototypes[c] = self.train_frozen[images][mine].mean(0)
            if self.method.anchor == "ema" and ema[c] is not None:
                self.anchors[c] = ema[c]
            elif self.method.anchor is not None:
                self.anchors[c] = mean_anchor(plain.router[:, mine])
        features = self.features(self.train_stem[images], self.train_frozen[images])
        for c in classes.tolist():
            mine = labels[images] == c
            self.prototypes[c] = F.normalize(features[mine], dim=-1).mean(0)

    def _fit(
        self,
        task: int,
        classes: torch.Tensor,
        images: torch.Tensor,
        ema: dict[int, torch.Tensor | None],
    ) -> dict[int, torch.Tensor | None]:
        """`epochs` epochs of local cross-entropy on task `task`'s `images` through a fresh
        cosine head; returns the classes' moving-average anchors (updated only by `ema`
        rows)."""
        settings = self.settings
        head = torch.nn.Parameter(
            0.02 * torch.randn(len(classes), self.model.backbone.config.hidden_size)
        )
        trained = [*self.model.adapters.parameters(), head]
        if self.gate is not None:
            trained += list(self.gate.parameters())
        optimizer = torch.optim.Adam(trained, lr=settings.lr)
        adapter_parameters = list(self.model.adapters.parameters())
        penalty = self._penalty(task)
        order = torch.Generator().manual_seed(derive_seed(self.seed, "trpr", "batches", task))
        labels = torch.from_numpy(self.stream.train_labels)
        for _ in range(settings.epochs):
            for batch in images[torch.randperm(len(images), generator=order)].split(
                settings.batch_size
            ):
                batch_labels = labels[batch].tolist()
                anchors = None
                if self.method.train_projection and all(ema[c] is not None for c in batch_labels):
                    anchors = torch.stack([ema[c] for c in batch_labels], 1)
                weights = routing(self.method, self.gate, anchors, settings.delta)
                routed = self.model.head(self.train_stem[batch], weights)
                logits = cosine_logits(routed.features, head, settings.logit_scale)
                loss = F.cross_entropy(logits, torch.searchsorted(classes, labels[batch]))
                if penalty is not None:
                    loss = loss + settings.penalty_weight * penalty(routed, self.train_stem[batch])
                if self.method.penalty == "ewc":
                    loss = loss + settings.penalty_weight * self.ewc(adapter_parameters)
                optimizer.zero_grad()
                loss.backward()
                self._keep_other_experts(task)
                if self.method.router_first_task_only and task > 0:
                    for adapter in self.model.adapters:
                        adapter.router.zero_grad(set_to_none=False)
                optimizer.step()
                if self.method.anchor == "ema":
                    with torch.no_grad():
                        used = routed.weights.clamp_min(1e-12).log()
                        for c in set(batch_labels):
                            ema[c] = ema_anchor(ema[c], used[:, labels[batch] == c])
        if self.method.penalty == "ewc":
            self.ewc.consolidate(adapter_parameters, self._task_losses(classes, images, head))
        return ema

    def _penalty(self, task: int) -> RouterKL | FeatureDistillation | None:
        """The row's penalty against the model as it is at the start of task `task` (none on
        the first task, and none for EWC, which the learner keeps across tasks)."""
        if task == 0 or self.method.penalty not in ("router_kl", "lwf"):
            return None
        if self.method.penalty == "router_kl":
            return RouterKL(self.model)
        return FeatureDistillation(self.model)

    def _task_losses(
        self, classes: torch.Tensor, images: torch.Tensor, head: torch.Tensor
    ) -> list[Callable[[], torch.Tensor]]:
        """The task's batch losses (plain routing, its final head), in image order: what EWC's
        Fisher is estimated from."""
        labels = torch.from_numpy(self.stream.train_labels)
        plain = routing(self.method, None, None, self.settings.delta)

        def batch_loss(batch: torch.Tensor) -> Callable[[], torch.Tensor]:
            def loss() -> torch.Tensor:
                features = self.model.head(self.train_stem[batch], plain).features
                logits = cosine_logits(features, head.detach(), self.settings.logit_scale)
                return F.cross_entropy(logits, torch.searchsorted(classes, labels[batch]))

            return loss

        return [batch_loss(batch) for batch in images.split(self.settings.batch_size)]

    def _keep_other_experts(self, task: int) -> None:
        """With `experts_per_task` K: zero the gradients of every expert but task `task`'s K
        (experts tK..tK+K−1), so with a fresh Adam per task the experts of earlier tasks stay as
        they were and later tasks' stay untrained; the routers train throughout."""
        per_task = self.settings.experts_per_task
        if not per_task or self.method.single_expert:
            return
        keep = torch.zeros(self.settings.experts, 1, 1)
        keep[task * per_task : (task + 1) * per_task] = 1.0
        for adapter in self.model.adapters:
            for weights in (adapter.down, adapter.up):
                if weights.grad is not None:
                    weights.grad.mul_(keep)

    def predict(
        self, stem: torch.Tensor, frozen: torch.Tensor, weights: Weights | None = None
    ) -> torch.Tensor:
        """Nearest adapted prototype among the classes seen so far, under the row's inference
        routing or the given `weights`."""
        if weights is None or not self.method.adapters:
            features = self.features(stem, frozen)
        else:
            with torch.no_grad():
                features = self.model.head(stem, weights).features
        classes = sorted(self.prototypes)
        prototypes = F.normalize(torch.stack([self.prototypes[c] for c in classes]), dim=-1)
        nearest = (F.normalize(features, dim=-1) @ prototypes.T).argmax(-1)
        return torch.tensor(classes)[nearest]

    def gate_value(self, stem: torch.Tensor, frozen: torch.Tensor) -> float:
        """The gate's mean γ over these images and the adapted blocks, at inference."""
        if self.gate is None:
            raise ValueError("this row has no gate")
        values = []
        inner = self.inference_weights(frozen)

        def recording(index: int, log_p: torch.Tensor, cls: torch.Tensor) -> torch.Tensor:
            values.append(self.gate(cls))
            return inner(index, log_p, cls)

        with torch.no_grad():
            self.model.head(stem, recording)
        return float(torch.stack(values).mean())

    def used_weights(self, stem: torch.Tensor, frozen: torch.Tensor) -> torch.Tensor:
        """[A, N, E] weights the experts are mixed with for these images now."""
        with torch.no_grad():
            return self.model.head(stem, self.inference_weights(frozen)).weights


def run_stream(
    method: Method,
    backbone: ViTModel,
    stream: Stream,
    settings: Settings,
    seed: int,
    frozen: FrozenInputs | None = None,
) -> dict[str, Any]:
    """Train `method` through the stream from `seed` and measure it (module docstring); the
    stream's `frozen` inputs are computed here unless given."""
    learner = Learner(method, backbone, stream, settings, seed, frozen)
    tasks = len(stream.task_classes)
    test_labels = torch.from_numpy(stream.test_labels)
    class_task = torch.empty(len(stream.class_names), dtype=torch.long)
    for task, classes in enumerate(stream.task_classes):
        class_task[torch.from_numpy(classes)] = task
    image_task = class_task[test_labels]
    matrix = np.full((tasks, tasks), np.nan)
    then_weights, then_right = {}, {}
    for task in range(tasks):
        learner.train_task(task)
        predicted = learner.predict(learner.test_stem, learner.test_frozen)
        right = predicted == test_labels
        for seen in range(task + 1):
            matrix[task, seen] = float(right[image_task == seen].float().mean())
        mine = image_task == task
        then_right[task] = right[mine]
        if method.routes:
            then_weights[task] = learner.used_weights(
                learner.test_stem[mine], learner.test_frozen[mine]
            )
    result: dict[str, Any] = {
        "matrix": matrix,
        **stream_summary(matrix),
        "parameters": learner.trainable_parameters(),
    }
    seen = sorted(learner.frozen_prototypes)
    result["task_identification"] = task_identification(
        learner.test_frozen,
        torch.stack([learner.frozen_prototypes[c] for c in seen]),
        class_task[seen],
        image_task,
        settings.anchor_temperature,
    )
    if method.routes:
        result.update(old_task_measures(learner, then_weights, then_right, image_task))
    return result


def old_task_measures(
    learner: Learner,
    then_weights: Mapping[int, torch.Tensor],
    then_right: Mapping[int, torch.Tensor],
    image_task: torch.Tensor,
) -> dict[str, Any]:
    """At the end of the stream, on the test images of every task but the last (taken task by
    task, as `then_weights` and `then_right` hold them): mean routing drift, the net loss per
    drift bin, accuracy now and with each image's end-of-task weights restored, and the gate's
    mean value where the row has a gate."""
    tasks = int(image_task.max()) + 1
    old = torch.cat([(image_task == t).nonzero()[:, 0] for t in range(tasks - 1)])
    stem, frozen = learner.test_stem[old], learner.test_frozen[old]
    labels = torch.from_numpy(learner.stream.test_labels)[old]
    then = torch.cat([then_weights[t] for t in range(tasks - 1)], 1)
    now = learner.used_weights(stem, frozen)
    drift = routing_drift(then.clamp_min(1e-12).log(), now.clamp_min(1e-12).log())
    right_then = torch.cat([then_right[t] for t in range(tasks - 1)])
    right_now = learner.predict(stem, frozen) == labels
    restored = learner.predict(stem, frozen, lambda index, log_p, cls: then[index])
    measures: dict[str, Any] = {
        "drift": float(drift.mean()),
        "drift_bins": drift_quantile_losses(
            drift.numpy(), right_then.numpy(), right_now.numpy(), learner.settings.drift_bins
        ),
        "old_accuracy": float(right_now.float().mean()),
        "restored_accuracy": float((restored == labels).float().mean()),
    }
    if learner.gate is not None:
        measures["gate_old"] = learner.gate_value(stem, frozen)
    return measures
