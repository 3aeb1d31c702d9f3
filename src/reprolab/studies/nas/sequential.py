"""Sequential editing: one editor method applied to a stream of requests batch after batch,
with the norms the norm-feedback loop would show logged per batch and the edit scores measured
every `eval_every` edits.

A *method* is an editor (MEMIT over the edit layers, or ROME at the target layer one request at
a time) with, optionally:

* `anchor`: NAS, each solved v* rescaled to the anchor norm: ``vstar`` the mean ‖v*‖ of the
  stream's first requests solved on the unedited model (the prototype's default), ``value`` the
  mean ‖v₀‖ there (the card's, an ablation);
* `clamp`: a tighter bound on ‖δ‖ than the run's (the clamp the abstract says does not help);
* `random_direction`: each layer's update replaced by a random matrix of the same Frobenius
  norm (the control that tells norm growth fed by edits from growth of any updates that size).

Checkpoints come after the first batch (the single-edit scores), after each batch that crosses
a multiple of `eval_every`, and after the last. Scores at a checkpoint (each over the latest
request of every fact edited so far; a fact is a subject with its candidate answers): efficacy
(the new answer wins at the request's prompt), generalisation (at its paraphrases),
specificity (each neighbour's answer still wins), and the generic loss (mean token loss on
generic text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from transformers import PreTrainedTokenizerBase

from reprolab.core.progress import progress
from reprolab.studies.nas.editing import (
    Batch,
    DeltaSolver,
    add_to_value_matrix,
    anchor_scaled,
    hidden_and_value,
    keys,
    memit_edit,
    rome_delta,
    solve_delta,
    value_matrix,
)
from reprolab.studies.nas.prompts import edit_batch
from reprolab.studies.nas.requests import EditRequest
from reprolab.studies.nas.scoring import share_preferred

ANCHORS = ("vstar", "value")
EDITORS = ("memit", "rome")


@dataclass(frozen=True)
class Method:
    """An editor and what is changed about it (module docstring)."""

    editor: str
    anchor: str | None = None
    clamp: float | None = None
    random_direction: bool = False

    def __post_init__(self) -> None:
        if self.editor not in EDITORS:
            raise ValueError(f"method editor {self.editor!r}: expected one of {EDITORS}")
        if self.anchor is not None and self.anchor not in ANCHORS:
            raise ValueError(f"method anchor {self.anchor!r}: expected one of {ANCHORS}")


@dataclass(frozen=True)
class Editing:
    """What every method of a run shares: the edit layers (the last is the target layer),
    MEMIT's covariance weight λ, how δ is solved, the batch size and the checkpoint spacing."""

    layers: tuple[int, ...]
    weight: float
    solver: DeltaSolver
    batch_size: int
    eval_every: int

    @property
    def target(self) -> int:
        """The layer whose residual the targets are set in."""
        return self.layers[-1]


def latest_per_fact(requests: Sequence[EditRequest]) -> list[EditRequest]:
    """The last request of each fact, in the order the facts were first edited."""
    latest: dict[tuple, EditRequest] = {}
    for request in requests:
        latest[(request.subject, request.candidates)] = request
    return list(latest.values())


def edit_scores(
    model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, requests: Sequence[EditRequest]
) -> dict[str, float]:
    """Efficacy, generalisation and specificity over `requests` (module docstring)."""
    facts = latest_per_fact(requests)
    paraphrased = [(p, r) for r in facts for p in r.paraphrases]
    neighbours = [(p, a, r) for r in facts for p, a in r.neighbours]
    return {
        "efficacy": share_preferred(
            model,
            tokenizer,
            [r.rewrite() for r in facts],
            [r.candidates for r in facts],
            [r.target_new for r in facts],
        ),
        "generalisation": share_preferred(
            model,
            tokenizer,
            [p for p, _ in paraphrased],
            [r.candidates for _, r in paraphrased],
            [r.target_new for _, r in paraphrased],
        ),
        "specificity": share_preferred(
            model,
            tokenizer,
            [p for p, _, _ in neighbours],
            [r.candidates for _, _, r in neighbours],
            [a for _, a, _ in neighbours],
        ),
    }


@torch.no_grad()
def generic_loss(
    model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str]
) -> float:
    """The mean token loss of the model on `texts` (padding excluded)."""
    model.eval()
    batch = tokenizer(list(texts), padding=True, return_tensors="pt").to(model.device)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    return float(model(**batch, labels=labels).loss)


def anchor_norms(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    requests: Sequence[EditRequest],
    openings: Sequence[str],
    editing: Editing,
) -> dict[str, float]:
    """The NAS anchors measured on the (unedited) model: mean ‖v*‖ of `requests` solved on it
    (``vstar``) and mean ‖v₀‖ at their subjects (``value``)."""
    batch = edit_batch(tokenizer, requests, openings).to(model.device)
    delta = solve_delta(model, editing.target, batch, len(requests), editing.solver)
    _, value = hidden_and_value(model, editing.target, batch, len(requests))
    return {
        "vstar": float((value + delta).norm(dim=1).mean()),
        "value": float(value.norm(dim=1).mean()),
    }


def random_like(update: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A Gaussian matrix of `update`'s shape rescaled to its Frobenius norm."""
    noise = torch.randn(update.shape, generator=generator, dtype=update.dtype)
    return (noise * update.norm().cpu() / noise.norm()).to(update.device)


class SequentialRun:
    """One method over one stream, on a model it edits in place."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: PreTrainedTokenizerBase,
        covariances: dict[int, torch.Tensor],
        openings: Sequence[str],
        editing: Editing,
        method: Method,
        anchors: dict[str, float],
        seed: int,
    ) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.covariances, self.openings = covariances, list(openings)
        self.editing, self.method = editing, method
        self.anchor = anchors[method.anchor] if method.anchor else None
        solver = editing.solver
        self.solver = replace(solver, clamp=method.clamp) if method.clamp else solver
        self.generator = torch.Generator().manual_seed(seed)
        self.layers = editing.layers if method.editor == "memit" else (editing.target,)

    def apply(self, model: torch.nn.Module, layer: int, update: torch.Tensor) -> torch.Tensor:
        """Add `update` (or, for the control, a random one of its norm) to `layer` of
        `model`; the update applied."""
        if self.method.random_direction:
            update = random_like(update, self.generator)
        add_to_value_matrix(model, layer, update)
        return update

    def targets(
        self, requests: Sequence[EditRequest]
    ) -> tuple[Batch, torch.Tensor, torch.Tensor, dict]:
        """The batch of `requests`, the value v* each should get at the target layer (NAS-scaled
        where the method anchors), the residual z it means there, and the batch's norms (per
        request: v* as solved, v* as wanted, δ, h and v₀)."""
        batch = edit_batch(self.tokenizer, requests, self.openings).to(self.model.device)
        target, count = self.editing.target, len(requests)
        delta = solve_delta(self.model, target, batch, count, self.solver)
        hidden, value = hidden_and_value(self.model, target, batch, count)
        vstar = value + delta
        wanted = anchor_scaled(vstar, self.anchor) if self.anchor else vstar
        norms = {
            "vstar": vstar.norm(dim=1).tolist(),
            "wanted": wanted.norm(dim=1).tolist(),
            "delta": delta.norm(dim=1).tolist(),
            "hidden": hidden.norm(dim=1).tolist(),
            "value": value.norm(dim=1).tolist(),
        }
        return batch, wanted, hidden + (wanted - value), norms

    def edit_rome(self, requests: Sequence[EditRequest]) -> dict:
        """ROME, one request after another at the target layer; norms per request, the norm
        of the batch's whole change of the layer's matrix."""
        logs: dict = {"vstar": [], "wanted": [], "delta": [], "hidden": [], "value": []}
        layer = self.editing.target
        before = value_matrix(self.model, layer).detach().clone()
        for request in requests:
            batch, wanted, _, norms = self.targets([request])
            for name, values in norms.items():
                logs[name] += values
            key = keys(self.model, layer, batch, 1)[0]
            matrix = value_matrix(self.model, layer).detach()
            update = rome_delta(key, wanted[0], matrix, self.covariances[layer])
            self.apply(self.model, layer, update)
        logs["update"] = [float((value_matrix(self.model, layer).detach() - before).norm())]
        return logs

    def edit_memit(self, requests: Sequence[EditRequest]) -> dict:
        """MEMIT over the edit layers; norms per request, update norms per layer."""
        batch, _, goal, logs = self.targets(requests)
        updates = memit_edit(
            self.model,
            self.layers,
            batch,
            goal,
            [self.covariances[layer] for layer in self.layers],
            self.editing.weight,
            self.apply,
        )
        logs["update"] = [float(update.norm()) for update in updates]
        return logs

    def edit(self, requests: Sequence[EditRequest]) -> dict:
        """Edit one batch with the method's editor; its log."""
        return (
            self.edit_rome(requests) if self.method.editor == "rome" else self.edit_memit(requests)
        )

    def run(
        self,
        stream: Sequence[EditRequest],
        generic_texts: Sequence[str],
        label: str,
        show_progress: bool = True,
    ) -> dict:
        """Edit the whole stream; the per-batch log and the checkpoint scores."""
        batches, checkpoints = [], []
        size, every = self.editing.batch_size, self.editing.eval_every
        starts = range(0, len(stream), size)
        for start in progress(starts, label, show_progress):
            done = stream[: start + size]
            batch = stream[start : start + size]
            logs = self.edit(batch)
            logs["edits"] = len(done)
            logs["weight_norm"] = [
                float(value_matrix(self.model, layer).detach().norm())
                for layer in self.editing.layers
            ]
            batches.append(logs)
            if start == 0 or len(done) % every < size or len(done) == len(stream):
                scores = edit_scores(self.model, self.tokenizer, done)
                scores["generic_loss"] = generic_loss(self.model, self.tokenizer, generic_texts)
                scores["edits"] = len(done)
                checkpoints.append(scores)
        return {"batches": batches, "checkpoints": checkpoints}
