"""The slide classifier trained on condensed sets: gated ABMIL with prototype weights.

Every row of the table trains the same network (`reprolab.models.abmil.GatedABMIL`, shared with
ssg) with the same budget: Adam at the row's tuned learning rate, `epochs` passes over the
training slides in minibatches of `batch_size` padded sets, in an order drawn from the seed, and
initial weights drawn from the seed alone, so rows differ only in what they were given. A
condensed slide enters as its prototypes with attention logits shifted by log w_k; a full bag is
the same with uniform weights. Loss: BCE on the slide logit.

Metrics on the test slides after the last epoch: balanced accuracy at p = 0.5 and AUC. The cost
of training is counted, not timed: instances through the encoder per epoch (Σ_s K_s), which
the table reports against the full bags'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from reprolab.core.determinism import derive_seed
from reprolab.models.abmil import GatedABMIL
from reprolab.studies.ssg.metrics import auc

WeightedSet = tuple[np.ndarray, np.ndarray]
"""(prototypes (K, d), weights (K,)) of one slide."""


def pad(sets: Sequence[WeightedSet]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Padded prototypes (B, K_max, d), mask (B, K_max) and weights (B, K_max; 1 in padding)."""
    k_max, dim = max(len(c) for c, _ in sets), sets[0][0].shape[1]
    x = torch.zeros(len(sets), k_max, dim)
    w = torch.ones(len(sets), k_max)
    mask = torch.zeros(len(sets), k_max, dtype=torch.bool)
    for b, (c, weights) in enumerate(sets):
        x[b, : len(c)] = torch.from_numpy(c)
        w[b, : len(c)] = torch.from_numpy(weights)
        mask[b, : len(c)] = True
    return x, mask, w


def balanced_accuracy(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """Mean of the per-class recalls of p ≥ 0.5 (NaN when a class is absent)."""
    predicted, labels = np.asarray(probabilities) >= 0.5, np.asarray(labels).astype(bool)
    if labels.all() or not labels.any():
        return float("nan")
    return float(0.5 * (predicted[labels].mean() + (~predicted[~labels]).mean()))


def build_classifier(dim: int, model: Mapping[str, Any]) -> GatedABMIL:
    """The gated ABMIL of every row (params: the study's ``model`` dict)."""
    return GatedABMIL(
        dim, int(model["hidden"]), int(model["attention_dim"]), float(model["dropout"])
    )


@torch.no_grad()
def predict(model: GatedABMIL, sets: Sequence[WeightedSet], batch_size: int) -> np.ndarray:
    """P(label 1) of every set (eval mode)."""
    model.eval()
    out = []
    for start in range(0, len(sets), batch_size):
        x, mask, w = pad(sets[start : start + batch_size])
        out.append(torch.sigmoid(model(x, mask, w).logit))
    return torch.cat(out).numpy().astype(np.float64)


def train_epoch(
    model: GatedABMIL,
    optimiser: torch.optim.Optimizer,
    sets: Sequence[WeightedSet],
    targets: torch.Tensor,
    order: np.ndarray,
    batch_size: int,
) -> None:
    """One pass over `sets` in `order`: BCE on each minibatch of padded sets, one Adam step."""
    model.train()
    for start in range(0, len(order), batch_size):
        ids = order[start : start + batch_size]
        x, mask, w = pad([sets[i] for i in ids])
        loss = F.binary_cross_entropy_with_logits(model(x, mask, w).logit, targets[ids])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()


def train_classifier(
    train: Sequence[WeightedSet],
    y_train: np.ndarray,
    test: Sequence[WeightedSet],
    y_test: np.ndarray,
    lr: float,
    params: Mapping[str, Any],
    seed: int,
) -> dict[str, float]:
    """Train on `train`, score `test`: balanced accuracy, AUC and instances per epoch."""
    settings = params["train"]
    torch.manual_seed(derive_seed(seed, "nicer", "classifier"))
    model = build_classifier(train[0][0].shape[1], params["model"])
    optimiser = torch.optim.Adam(
        model.parameters(), lr=lr, weight_decay=float(settings["weight_decay"])
    )
    order = np.random.default_rng(derive_seed(seed, "nicer", "order"))
    batch_size = int(settings["batch_size"])
    targets = torch.as_tensor(np.asarray(y_train), dtype=torch.float32)
    for _ in range(int(settings["epochs"])):
        train_epoch(model, optimiser, train, targets, order.permutation(len(train)), batch_size)
    probabilities = predict(model, test, batch_size)
    return {
        "balanced_accuracy": balanced_accuracy(probabilities, y_test),
        "auc": auc(probabilities, y_test),
        "instances_per_epoch": int(sum(len(c) for c, _ in train)),
    }
