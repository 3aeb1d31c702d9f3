"""One training run: (train bags, test bags, method, params, seed) → metrics and curves.

Every method gets the same budget: Adam with the same lr and weight decay, the same epochs,
batch size and bag order for a seed; the network's initial weights come from the seed alone,
so ABMIL and the three grounding methods (all gated ABMIL) start from identical weights.

Loss: BCE on the bag logit for every method. CLAM-SB adds its instance clustering loss
(weight ``clam.instance_weight``; the bag loss gets 1 − that weight, as in CLAM). A grounding
method adds λ · 1[y = 1] · KL(g/Σg ‖ α) from epoch ``warmup_epochs`` on (0-based), once the
positive bank holds at least ``min_supports`` vectors; g is computed on detached embeddings
against the bank *before* the batch pushes its own supports (top ⌈support_fraction · n⌉ by α
of every training bag, into the bank of its label).

Metrics (test set, after the last epoch): bag AUC, bag accuracy at p = 0.5, instance AUC (see
`metrics`), final training loss; grounding methods also report ``instance_auc_grounding``,
the AUC of g itself against the final positive bank (the retained mass as a localiser).
Wall-clock time is returned apart from the metrics so metrics stay byte-identical.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.progress import progress as progress_bar
from reprolab.studies.ssg.bank import SupportBank, top_fraction
from reprolab.studies.ssg.data import Bags, Padded, pad
from reprolab.studies.ssg.grounding import grounding, grounding_kl
from reprolab.studies.ssg.metrics import bag_metrics, instance_auc
from reprolab.studies.ssg.models import CLAMSB, GROUNDING, METHODS, build_model

__all__ = ["METHODS", "RunResult", "train_run"]


@dataclass
class RunResult:
    """Scalar metrics, per-epoch curves, and the wall-clock seconds of training (not a metric)."""

    metrics: dict[str, float]
    curves: dict[str, np.ndarray]
    seconds: float


@torch.no_grad()
def evaluate(
    model: torch.nn.Module, data: Padded, method: str, bank: SupportBank | None, ground: dict
) -> dict[str, float]:
    """Test metrics of the current model (eval mode)."""
    model.eval()
    out = model(data.x, data.mask)
    y = data.y.cpu().numpy()
    metrics = bag_metrics(out.logit.cpu().numpy(), y)
    args = (data.mask.cpu().numpy(), data.instance_labels.cpu().numpy(), y)
    metrics["instance_auc"] = instance_auc(out.score.cpu().numpy(), *args)
    if bank is not None:
        metrics["instance_auc_grounding"] = float("nan")  # an empty bank grounds nothing
        if bank.size(1) > 0:
            g = grounding(method, out.h, data.mask, bank.supports(1), ground)
            metrics["instance_auc_grounding"] = instance_auc(g.cpu().numpy(), *args)
    return metrics


def batch_loss(
    model: torch.nn.Module,
    method: str,
    x: torch.Tensor,
    mask: torch.Tensor,
    y: torch.Tensor,
    bank: SupportBank | None,
    model_params: dict,
    grounding_on: bool,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """The method's loss on one batch, plus attention and embeddings for the bank update."""
    out = model(x, mask)
    loss = F.binary_cross_entropy_with_logits(out.logit, y)
    if isinstance(model, CLAMSB):
        w = model_params["clam"]["instance_weight"]
        loss = (1 - w) * loss + w * model.instance_loss(out, mask, y)
    if bank is not None and grounding_on:
        ground = model_params["grounding"]
        pos = y > 0.5
        if pos.any() and bank.size(1) >= ground["min_supports"]:
            g = grounding(method, out.h[pos], mask[pos], bank.supports(1), ground)
            loss = loss + ground["lambda"] * pos.float().mean() * grounding_kl(
                g, out.attention[pos], mask[pos]
            )
    return loss, out.attention, out.h


def push_supports(
    bank: SupportBank, attention: torch.Tensor, h: torch.Tensor, mask: torch.Tensor, y, fraction
):
    """Append each bag's top-attention embeddings to the bank of its label."""
    for i, idx in enumerate(top_fraction(attention.detach(), mask, fraction)):
        bank.push(int(y[i] > 0.5), h[i, idx])


def train_run(
    bags_train: Bags,
    bags_test: Bags,
    method: str,
    model_params: dict,
    train_params: dict,
    seed: int,
    threads: int,
    progress: bool = False,
) -> RunResult:
    """Train `method` on `bags_train`, evaluate on `bags_test`; deterministic for fixed inputs.

    `model_params`: hidden, attention_dim, dropout, clam {k_fraction, instance_weight},
    transmil {layers, heads, ff}, grounding {lambda, warmup_epochs, eps, rho, iterations,
    bank_capacity, support_fraction, min_supports}. `train_params`: epochs, batch_size, lr,
    weight_decay, device (``cpu``, ``cuda`` or ``auto`` = CUDA when present).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    start = time.perf_counter()
    seed_everything(derive_seed(seed, "ssg", "init"), threads)
    device = resolve_device(train_params["device"])
    model = build_model(method, bags_train.dim, model_params).to(device)
    opt = torch.optim.Adam(
        model.parameters(), lr=train_params["lr"], weight_decay=train_params["weight_decay"]
    )
    train, test = pad(bags_train).to(device), pad(bags_test).to(device)
    ground = model_params["grounding"]
    bank = None
    if method in GROUNDING:
        bank = SupportBank(2, ground["bank_capacity"], model_params["hidden"], device)
    order = np.random.default_rng(derive_seed(seed, "ssg", "batches"))
    batch, epochs = train_params["batch_size"], train_params["epochs"]
    curves: dict[str, list[float]] = {"train_loss": [], "bag_auc": [], "instance_auc": []}
    metrics: dict[str, float] = {}
    for epoch in progress_bar(range(epochs), f"ssg {method}", enabled=progress, total=epochs):
        model.train()
        perm = torch.from_numpy(order.permutation(len(bags_train))).to(device)
        losses = []
        for i in range(0, len(perm), batch):
            idx = perm[i : i + batch]
            x, mask, y = train.x[idx], train.mask[idx], train.y[idx]
            loss, attention, h = batch_loss(
                model, method, x, mask, y, bank, model_params, epoch >= ground["warmup_epochs"]
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()) * len(idx))
            if bank is not None:
                push_supports(bank, attention, h, mask, y, ground["support_fraction"])
        final = epoch == epochs - 1
        metrics = evaluate(model, test, method, bank if final else None, ground)
        curves["train_loss"].append(sum(losses) / len(perm))
        curves["bag_auc"].append(metrics["bag_auc"])
        curves["instance_auc"].append(metrics["instance_auc"])
    metrics["final_loss"] = curves["train_loss"][-1]
    return RunResult(
        metrics=metrics,
        curves={
            "epoch": np.arange(1, epochs + 1, dtype=np.int64),
            **{k: np.asarray(v, dtype=np.float64) for k, v in curves.items()},
        },
        seconds=time.perf_counter() - start,
    )
