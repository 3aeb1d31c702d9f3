"""Continual instruction tuning of an `MLLMAdapter` through an ordered task stream.

One function, `run_stream`, trains the model task after task with one method and evaluates
every task's test split after each task (the accuracy matrix of continual learning; a task
with a declared metric is scored by it on generated answers, see `evaluate`). The
methods differ only in their `Method` switches (`spec`), so every comparison runs the same
code:

* ``gate``: ``"all"`` (every sample updates the projector), ``"necessity"`` (VNG-CT's gate,
  `gates.NecessityGate`), ``"random"`` (`gates.RandomGate` at a given per-task rate);
  ``freeze_visual`` takes the projector out of the optimiser instead;
* ``calibration``: the calibration scale is applied, learns from the samples the gate keeps
  away from the projector, and gets the invariance loss ``μ · KL(p(·|I,q) ‖ p(·|I_π,q))`` on
  those samples (its gradient goes to the calibration path only);
* ``ewc``: an online EWC penalty on the language and visual paths (diagonal Fisher from
  squared mini-batch gradients at the end of each task).

Choices where the design card leaves room: the necessity of a training sample reuses the
training forward's loss under its own image (the gate is set after the forward, see
`adapter.GateSlot`) and adds the loss under the null image (one more forward, without
gradients unless the invariance loss needs them); a fresh AdamW per task; batch order from
a seeded generator per task. Per task
the run records the routing rate and, against the generator's `visual_needed` labels, the
gate's precision and recall, and keeps end-of-task snapshots of the projector and of the
rest, so `swap_accuracy` can say how much of the visual forgetting is the projector's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from reprolab.core.progress import progress
from reprolab.studies.vngct.adapter import GateSlot, MLLMAdapter
from reprolab.studies.vngct.data import TaskData
from reprolab.studies.vngct.gates import NecessityGate, RandomGate, shifted
from reprolab.studies.vngct.generation import AnswerScorer
from reprolab.studies.vngct.spec import Method
from reprolab.studies.vngct.tensors import (
    IGNORE,
    Samples,
    answer_loss,
    exact_match,
    ranked_match,
)


@dataclass(frozen=True)
class Training:
    """Optimisation and gate settings shared by every method of a study."""

    batch_size: int = 32
    lr_language: float = 5e-4
    lr_visual: float = 1e-3
    lr_calibration: float = 1e-3
    weight_decay: float = 0.0
    gate_floor: float = 0.05
    gate_noise_quantile: float = 0.05
    calibration_weight: float = 1.0
    ewc_strength: float = 10.0
    fisher_batches: int = 8
    eval_batch_size: int = 256


@dataclass
class StreamResult:
    """What a run measured: accuracies after each task, routing, snapshots, time."""

    tasks: list[str]
    correct: list[list[np.ndarray]]  # [after task t][task k] -> score per test item
    exact: list[list[np.ndarray]] = field(default_factory=list)  # same, greedy exact match
    routing: list[dict[str, float]] = field(default_factory=list)
    projectors: list[dict[str, torch.Tensor]] = field(default_factory=list)
    others: list[dict[str, torch.Tensor]] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    wall_s: float = 0.0


def _projector(adapter: MLLMAdapter) -> torch.nn.Module:
    return adapter.model.model.multi_modal_projector


def _snapshot_rest(adapter: MLLMAdapter) -> dict[str, torch.Tensor]:
    """Copies of every trainable parameter outside the projector (what the stream changes; a
    frozen 7B base is not copied)."""
    skip = "model.model.multi_modal_projector."
    return {
        name: parameter.detach().clone()
        for name, parameter in adapter.named_parameters()
        if parameter.requires_grad and not name.startswith(skip)
    }


def calibration_kl(
    logits: torch.Tensor, null_logits: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor
) -> torch.Tensor:
    """Weighted mean over samples of KL(p(·|image) ‖ p(·|null)) at the answer positions."""
    answer = (labels != IGNORE).to(logits.dtype)
    log_p = torch.log_softmax(logits, -1)
    log_q = torch.log_softmax(null_logits, -1)
    per_token = (log_p.exp() * (log_p - log_q)).sum(-1)
    per_sample = (per_token * answer).sum(1) / answer.sum(1).clamp(min=1.0)
    return (weight * per_sample).sum() / weight.sum().clamp(min=1.0)


class _EWC:
    """Online EWC: accumulated diagonal Fisher and the parameters at the last task's end."""

    def __init__(self, parameters: list[torch.nn.Parameter], strength: float) -> None:
        self.parameters = parameters
        self.strength = strength
        self.fisher = [torch.zeros_like(p) for p in parameters]
        self.anchor: list[torch.Tensor] | None = None

    def penalty(self) -> torch.Tensor:
        if self.anchor is None:
            return torch.zeros(())
        total = sum(
            (f * (p - a) ** 2).sum()
            for f, p, a in zip(self.fisher, self.parameters, self.anchor, strict=True)
        )
        return 0.5 * self.strength * total

    def consolidate(self, squared_grads: list[torch.Tensor]) -> None:
        for fisher, square in zip(self.fisher, squared_grads, strict=True):
            fisher += square
        self.anchor = [p.detach().clone() for p in self.parameters]


def evaluate(
    adapter: MLLMAdapter,
    features: torch.Tensor,
    samples: Samples,
    choices: torch.Tensor | None,
    calibrate: bool,
    batch_size: int,
    scorer: AnswerScorer | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: the task's score (the tables' accuracy), and exact match (bool).

    With `scorer` (a task whose metric params declare, paper scale) the score is that metric of
    the greedily generated answer (`generation.AnswerScorer`). Otherwise it is whether the
    answer ranks first among `choices`, the token ids of the task's single-token answers (see
    `vngct.__init__`). Exact match, teacher-forced and greedy over the whole vocabulary, is kept
    beside it (and stands in for the ranking when `choices` is None and no scorer is given).
    """
    adapter.eval()
    ranked, exact = [], []
    with torch.no_grad():
        for start in range(0, len(samples), batch_size):
            batch = samples.take(torch.arange(start, min(start + batch_size, len(samples))))
            logits = adapter(
                batch.input_ids, batch.attention_mask, features[batch.image], calibrate
            )
            exact.append(exact_match(logits, batch.labels).cpu().numpy())
            if scorer is None and choices is None:
                ranked.append(exact[-1])
            elif scorer is None:
                ranked.append(ranked_match(logits, batch.labels, choices).cpu().numpy())
    if scorer is not None:
        return scorer(adapter, features, samples, calibrate, batch_size), np.concatenate(exact)
    return np.concatenate(ranked), np.concatenate(exact)


def run_stream(
    adapter: MLLMAdapter,
    features: torch.Tensor,
    tasks: list[TaskData],
    epochs: list[int],
    method: Method,
    training: Training,
    seed: int,
    random_rates: list[float] | None = None,
    show_progress: bool = False,
) -> StreamResult:
    """Train `adapter` on `tasks` in order with `method`; see the module docstring.

    `features` are the frozen tower's features of every image the samples index; `epochs`
    gives each task's number of epochs; `random_rates` (one per task) is required for the
    random gate.
    """
    if len(epochs) != len(tasks):
        raise ValueError(f"{len(epochs)} epoch counts for {len(tasks)} tasks")
    if method.gate == "random" and (random_rates is None or len(random_rates) != len(tasks)):
        raise ValueError(f"the random gate needs one routing rate per task ({len(tasks)})")
    started = time.perf_counter()
    order = np.random.default_rng(seed)
    necessity_gate = NecessityGate(training.gate_floor, training.gate_noise_quantile)
    random_gate = RandomGate(seed)
    gates = {"necessity": necessity_gate, "random": random_gate}
    for parameter in adapter.visual_parameters():
        parameter.requires_grad_(not method.freeze_visual)
    ewc = _EWC(adapter.language_parameters() + adapter.visual_parameters(), training.ewc_strength)
    result = StreamResult([t.name for t in tasks], [])
    for number, task in enumerate(
        progress(tasks, desc="continual tuning (tasks)", enabled=show_progress)
    ):
        groups = [{"params": adapter.language_parameters(), "lr": training.lr_language}]
        if not method.freeze_visual:
            groups.append({"params": adapter.visual_parameters(), "lr": training.lr_visual})
        if method.calibration:
            groups.append(
                {"params": adapter.calibration_parameters(), "lr": training.lr_calibration}
            )
        optimizer = torch.optim.AdamW(groups, weight_decay=training.weight_decay)
        necessity_gate.start_task()
        if random_rates is not None:
            random_gate.rate = random_rates[number]
        routed, needed, losses = [], [], []
        for _ in range(epochs[number]):
            permutation = torch.as_tensor(order.permutation(len(task.train)))
            for start in range(0, len(task.train), training.batch_size):
                batch = task.train.take(permutation[start : start + training.batch_size])
                loss, gate = _step(
                    adapter, features, batch, method, training, optimizer, ewc, gates
                )
                losses.append(loss)
                if gate is not None:
                    routed.append(gate.cpu().numpy() > 0.5)
                    needed.append(batch.visual_needed.numpy())
        if method.ewc:
            ewc.consolidate(
                _squared_grads(adapter, features, task.train, ewc.parameters, training, order)
            )
        result.routing.append(_routing_stats(routed, needed))
        result.train_loss.append(float(np.mean(losses)))
        scores = [
            evaluate(
                adapter,
                features,
                t.test,
                t.choices,
                method.calibration,
                training.eval_batch_size,
                t.scorer,
            )
            for t in tasks
        ]
        result.correct.append([ranked for ranked, _ in scores])
        result.exact.append([exact for _, exact in scores])
        result.projectors.append(
            {k: v.detach().clone() for k, v in _projector(adapter).state_dict().items()}
        )
        result.others.append(_snapshot_rest(adapter))
    result.wall_s = time.perf_counter() - started
    return result


def _step(
    adapter: MLLMAdapter,
    features: torch.Tensor,
    batch: Samples,
    method: Method,
    training: Training,
    optimizer: torch.optim.Optimizer,
    ewc: _EWC,
    gates: dict[str, NecessityGate | RandomGate],
) -> tuple[float, torch.Tensor | None]:
    """One optimiser step on `batch`; the training loss and the gate it used (None: no gate).

    With the invariance loss, image and null go through one forward together (its gradient
    reaches the calibration path through both); otherwise the null's losses, which the
    necessity gate needs, come from a second forward without gradients. Either way the gate is
    computed from this step's losses and put into the `GateSlot` before the backward (see
    `adapter.GateSlot`).
    """
    adapter.train()
    image = features[batch.image]
    calibrating = method.calibration and method.gate != "all"
    slot = None if method.gate == "all" and not method.calibration else GateSlot()
    n = len(batch)
    if calibrating:
        logits_both = adapter(
            batch.input_ids.repeat(2, 1),
            batch.attention_mask.repeat(2, 1),
            torch.cat([image, shifted(image)]),
            True,
            slot,
        )
        losses_both = answer_loss(logits_both, batch.labels.repeat(2, 1))
        logits, null_logits = logits_both[:n], logits_both[n:]
        losses, null_losses = losses_both[:n], losses_both[n:]
    else:
        logits = adapter(batch.input_ids, batch.attention_mask, image, method.calibration, slot)
        losses = answer_loss(logits, batch.labels)
        if method.gate == "necessity":
            with torch.no_grad():
                null_logits = adapter(
                    batch.input_ids, batch.attention_mask, shifted(image), method.calibration
                )
                null_losses = answer_loss(null_logits, batch.labels)
    if method.gate == "necessity":
        gate = gates["necessity"]((null_losses - losses).detach())
    elif method.gate == "random":
        gate = gates["random"](n)
    else:
        gate = torch.ones(n) if slot is not None else None
    if slot is not None:
        slot.gate = torch.cat([gate, gate]) if calibrating else gate
    loss = losses.mean()
    if method.ewc:
        loss = loss + ewc.penalty()
    optimizer.zero_grad(set_to_none=True)
    calibration_grads = None
    if calibrating and training.calibration_weight > 0 and bool((gate < 1).any()):
        invariance = training.calibration_weight * calibration_kl(
            logits, null_logits, batch.labels, 1.0 - gate
        )
        calibration_grads = torch.autograd.grad(
            invariance, adapter.calibration_parameters(), retain_graph=True
        )
    loss.backward()
    if calibration_grads is not None:
        for parameter, grad in zip(
            adapter.calibration_parameters(), calibration_grads, strict=True
        ):
            parameter.grad = grad if parameter.grad is None else parameter.grad + grad
    optimizer.step()
    return float(loss.detach()), gate if method.gate != "all" else None


def necessity(
    adapter: MLLMAdapter,
    batch: Samples,
    image: torch.Tensor,
    null: torch.Tensor,
    calibrate: bool = False,
) -> torch.Tensor:
    """``v = ℓ(null) − ℓ(image)`` per sample (nats/token), without gradients, in eval mode."""
    adapter.eval()
    with torch.no_grad():
        ids, mask = batch.input_ids, batch.attention_mask
        with_image = answer_loss(adapter(ids, mask, image, calibrate), batch.labels)
        with_null = answer_loss(adapter(ids, mask, null, calibrate), batch.labels)
    return with_null - with_image


def _squared_grads(
    adapter: MLLMAdapter,
    features: torch.Tensor,
    samples: Samples,
    parameters: list[torch.nn.Parameter],
    training: Training,
    order: np.random.Generator,
) -> list[torch.Tensor]:
    """Diagonal Fisher estimate: mean over mini-batches of (batch-mean gradient)² × batch size."""
    squares = [torch.zeros_like(p) for p in parameters]
    rows = torch.as_tensor(order.permutation(len(samples)))
    batches = [
        rows[start : start + training.batch_size]
        for start in range(0, len(rows), training.batch_size)
    ][: training.fisher_batches]
    adapter.eval()
    for picked in batches:
        batch = samples.take(picked)
        logits = adapter(batch.input_ids, batch.attention_mask, features[batch.image])
        grads = torch.autograd.grad(
            answer_loss(logits, batch.labels).mean(), parameters, allow_unused=True
        )
        for square, grad in zip(squares, grads, strict=True):
            if grad is not None:
                square += grad.detach() ** 2 * len(batch) / len(batches)
    return squares


def _routing_stats(routed: list[np.ndarray], needed: list[np.ndarray]) -> dict[str, float]:
    """Routing rate and the gate's precision/recall against the `visual_needed` labels."""
    if not routed:
        return {"rate": float("nan"), "precision": float("nan"), "recall": float("nan")}
    gate, truth = np.concatenate(routed), np.concatenate(needed)
    hits = float((gate & truth).sum())
    return {
        "rate": float(gate.mean()),
        "precision": hits / gate.sum() if gate.any() else float("nan"),
        "recall": hits / truth.sum() if truth.any() else float("nan"),
    }


def swap_accuracy(
    adapter: MLLMAdapter,
    features: torch.Tensor,
    tasks: list[TaskData],
    result: StreamResult,
    calibrate: bool,
    batch_size: int,
) -> dict[str, list[float]]:
    """Which path forgot: accuracy on each earlier task's visually necessary test items with
    the end-of-task-k rest of the model and the final projector (``final_projector``), and
    with the final rest and the end-of-task-k projector (``old_projector``); NaN where a task
    has no such items. The adapter is left in its final state.
    """
    out: dict[str, list[float]] = {"final_projector": [], "old_projector": []}
    projector, last = _projector(adapter), len(tasks) - 1
    for k, task in enumerate(tasks[:last]):
        visual = task.test.visual_needed
        rows = torch.nonzero(visual).flatten()
        for key, rest, proj in (
            ("final_projector", result.others[k], result.projectors[last]),
            ("old_projector", result.others[last], result.projectors[k]),
        ):
            if len(rows) == 0:
                out[key].append(float("nan"))
                continue
            adapter.load_state_dict(rest, strict=False)
            projector.load_state_dict(proj)
            ranked, _ = evaluate(
                adapter,
                features,
                task.test.take(rows),
                task.choices,
                calibrate,
                batch_size,
                task.scorer,
            )
            out[key].append(float(ranked.mean()))
    adapter.load_state_dict(result.others[last], strict=False)
    projector.load_state_dict(result.projectors[last])
    return out


def held_out_necessity(
    adapter: MLLMAdapter,
    features: torch.Tensor,
    tasks: list[TaskData],
    calibrate: bool,
    batch_size: int,
) -> list[dict[str, float]]:
    """Per task, the final model's necessity on its test items (null: the neighbour's image in
    the evaluation batch): mean over items that need the image and over those that do not,
    and the AUROC of necessity against the generator's labels (NaN where a class is absent)."""
    from sklearn.metrics import roc_auc_score

    out = []
    for task in tasks:
        values = []
        for start in range(0, len(task.test), batch_size):
            batch = task.test.take(torch.arange(start, min(start + batch_size, len(task.test))))
            image = features[batch.image]
            v = necessity(adapter, batch, image, shifted(image), calibrate)
            values.append(v.cpu().numpy())
        v, needed = np.concatenate(values), task.test.visual_needed.numpy()
        both = needed.any() and (~needed).any()
        out.append(
            {
                "visual_mean": float(v[needed].mean()) if needed.any() else float("nan"),
                "text_mean": float(v[~needed].mean()) if (~needed).any() else float("nan"),
                "auroc": float(roc_auc_score(needed, v)) if both else float("nan"),
            }
        )
    return out
