"""The regularised baselines' penalties, added to a task's loss from its second task on.

* `RouterKL` (the increment regulariser TRPR replaces): KL(p_before ‖ p) between each router's
  output as it was before the task and now, on the current images' class tokens.
* `FeatureDistillation` (LwF on adapters): 1 − cos(f, f_before) between each current image's
  feature now and under the adapters as they were before the task (plain routing). Distilling
  features rather than logits, because every task has its own local head.
* `EWC` (on adapters): Σ_i F_i (θ_i − θ*_i)² / 2 with the diagonal empirical Fisher F of the
  adapters' parameters, summed over finished tasks, and θ* the parameters at the end of the last
  one. The Fisher is the mean squared gradient of a task's cross-entropy over its batches.

Each penalty is multiplied by the row's `penalty_weight`. No old images are kept by any of them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

import torch
import torch.nn.functional as F

from reprolab.studies.trpr.adapters import FrozenViT, Routed, plain_routing


class RouterKL:
    """KL(p_before ‖ p) of every adapted block's router, against the routers at the task's
    start."""

    def __init__(self, model: FrozenViT) -> None:
        self.before = copy.deepcopy(list(model.adapters))

    def __call__(self, routed: Routed, stem: torch.Tensor) -> torch.Tensor:
        changes = []
        for adapter, tokens, log_p in zip(self.before, routed.tokens, routed.router, strict=True):
            with torch.no_grad():
                log_before = adapter.route(tokens)
            changes.append((log_before.exp() * (log_before - log_p)).sum(-1).mean())
        return torch.stack(changes).mean()


class FeatureDistillation:
    """1 − cos(f, f_before), mean over the batch, with the adapters at the task's start."""

    def __init__(self, model: FrozenViT) -> None:
        self.model = model
        self.before = torch.nn.ModuleList(copy.deepcopy(list(model.adapters)))

    def __call__(self, routed: Routed, stem: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            before = self.model.head(stem, plain_routing, self.before).features
        return (1.0 - F.cosine_similarity(routed.features, before, dim=-1)).mean()


class EWC:
    """Elastic weight consolidation of the adapters' parameters across tasks."""

    def __init__(self) -> None:
        self.fisher: list[torch.Tensor] = []
        self.anchor: list[torch.Tensor] = []

    def consolidate(
        self, parameters: list[torch.nn.Parameter], losses: Iterable[Callable[[], torch.Tensor]]
    ) -> None:
        """Add a finished task's Fisher (the mean squared gradient of each of its batch losses,
        `losses`) and keep the parameters as they are now as θ*."""
        squares = [torch.zeros_like(p) for p in parameters]
        count = 0
        for loss in losses:
            grads = torch.autograd.grad(loss(), parameters, allow_unused=True)
            for total, grad in zip(squares, grads, strict=True):
                if grad is not None:
                    total += grad.detach() ** 2
            count += 1
        mean = [total / max(count, 1) for total in squares]
        self.fisher = (
            mean if not self.fisher else [a + b for a, b in zip(self.fisher, mean, strict=True)]
        )
        self.anchor = [p.detach().clone() for p in parameters]

    def __call__(self, parameters: list[torch.nn.Parameter]) -> torch.Tensor:
        """Σ F (θ − θ*)² / 2; zero before the first consolidation."""
        if not self.fisher:
            return torch.zeros(())
        terms = [
            (fisher * (p - anchor) ** 2).sum()
            for fisher, p, anchor in zip(self.fisher, parameters, self.anchor, strict=True)
        ]
        return torch.stack(terms).sum() / 2
