"""Feedback rules: what each hidden block output h_l receives in place of ∂L/∂h_l.

* ``dfa``: δ_{h_l} = e B_l with a fixed random B_l (C x n_l), entries N(0, 1/n_l).
* ``linfa`` / ``linfa_zero``: a learned linear surrogate g_l(h) = A_l h + c_l, δ_{h_l} = e A_l,
  with A_l started at DFA's B_l or at zero.
* ``ndfa``: a nonlinear surrogate g_l, δ_{h_l} = J_{g_l}(h_l)ᵀ e (one VJP local to g_l).

The learned surrogates are trained online by a local loss on (h_l, ŷ): ``target`` ``"logits"``
(squared error to ŷ) or ``"softmax"`` (KL from softmax(ŷ) to softmax(g_l)), plus ``jvp_weight``
times a forward-mode Jacobian-matching term 1 − cos(J_g u, J_down u) for a random probe u. Every
surrogate sees h_l detached, so nothing here creates graph edges into the main network.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import jvp

from reprolab.studies.ndfa.models import BlockNet

METHODS: tuple[str, ...] = ("bp", "dfa", "linfa", "linfa_zero", "ndfa")


def draw_feedback_matrices(
    shapes: list[tuple[int, ...]], n_classes: int, generator: torch.Generator
) -> list[torch.Tensor]:
    """Draw DFA's fixed matrices B_l (C x n_l), entries N(0, 1/n_l).

    The 1/n_l variance (instead of the card's 1/C) gives e B_l the scale of a downstream
    Linear layer's gradient and makes a linear surrogate started at B_l output O(1) logits.
    """
    return [
        torch.randn(n_classes, math.prod(s), generator=generator) / math.sqrt(math.prod(s))
        for s in shapes
    ]


class FlatLinear(nn.Module):
    """g(h) = A flat(h) + c, with A started at a given matrix (DFA's B or zeros)."""

    def __init__(self, start: torch.Tensor) -> None:
        super().__init__()
        self.linear = nn.Linear(start.shape[1], start.shape[0])
        with torch.no_grad():
            self.linear.weight.copy_(start)
            self.linear.bias.zero_()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Linear read-out of the flattened block output."""
        return self.linear(h.flatten(1))


class NonlinearSurrogate(nn.Module):
    """NDFA's g_l: a small nonlinear branch, optionally plus a linear skip started at B_l.

    Vector inputs: Linear(n_l, r) → tanh → Linear(r, C). Feature maps: 1x1 conv (C_l → r) → ReLU
    → global average pool → Linear(r, C), which keeps the feedback spatially varying and
    state-dependent. With ``skip`` the output layer of the branch starts at zero and the skip at
    B_l, so NDFA starts exactly as DFA and can only add nonlinear structure by learning.
    """

    def __init__(
        self, shape: tuple[int, ...], n_classes: int, width: int, skip: torch.Tensor | None
    ):
        super().__init__()
        if len(shape) == 1:
            self.branch = nn.Sequential(nn.Linear(shape[0], width), nn.Tanh())
        else:
            self.branch = nn.Sequential(
                nn.Conv2d(shape[0], width, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()
            )
        self.out = nn.Linear(width, n_classes)
        self.skip = FlatLinear(skip) if skip is not None else None
        if skip is not None:
            with torch.no_grad():
                self.out.weight.zero_()
                self.out.bias.zero_()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Surrogate logits for block output h."""
        y = self.out(self.branch(h))
        return y if self.skip is None else y + self.skip(h)


class DirectFeedback(nn.Module):
    """Base: turn the output error into one feedback tensor per hidden block output."""

    def feedback(self, hs: list[torch.Tensor], e: torch.Tensor) -> list[torch.Tensor]:
        """Feedback δ_{h_l} for each block output, carrying no autograd graph."""
        raise NotImplementedError

    def learn_and_feedback(
        self, hs: list[torch.Tensor], logits: torch.Tensor, e: torch.Tensor, net: BlockNet
    ) -> list[torch.Tensor]:
        """Feedback for this step; learned rules also accumulate their surrogate gradients."""
        return self.feedback(hs, e)


class FixedDFA(DirectFeedback):
    """Direct Feedback Alignment with fixed random matrices."""

    def __init__(self, matrices: list[torch.Tensor]) -> None:
        super().__init__()
        for i, b in enumerate(matrices):
            self.register_buffer(f"B{i}", b)
        self.n_layers = len(matrices)

    def feedback(self, hs: list[torch.Tensor], e: torch.Tensor) -> list[torch.Tensor]:
        """δ_{h_l} = e B_l reshaped to h_l's shape."""
        e = e.detach()
        return [(e @ getattr(self, f"B{i}")).reshape(h.shape) for i, h in enumerate(hs)]


class LearnedFeedback(DirectFeedback):
    """Feedback through learned surrogates g_l: δ_{h_l} = J_{g_l}(h_l)ᵀ e."""

    def __init__(self, surrogates: list[nn.Module], surrogate: dict, generator: torch.Generator):
        super().__init__()
        self.surrogates = nn.ModuleList(surrogates)
        self.target = surrogate["target"]
        self.jvp_weight = float(surrogate["jvp_weight"])
        self.generator = generator

    def _outputs(self, hs: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Surrogate outputs on detached leaf copies of the block outputs."""
        leaves = [h.detach().requires_grad_(True) for h in hs]
        return leaves, [g(x) for g, x in zip(self.surrogates, leaves, strict=True)]

    def feedback(self, hs: list[torch.Tensor], e: torch.Tensor) -> list[torch.Tensor]:
        """One VJP per surrogate, no graph kept."""
        leaves, outs = self._outputs(hs)
        grads = torch.autograd.grad(outs, leaves, grad_outputs=[e.detach()] * len(outs))
        return list(grads)

    def _fit_loss(self, outs: list[torch.Tensor], logits: torch.Tensor) -> torch.Tensor:
        """Sum over layers of the local loss pulling g_l(h_l) towards the logits ŷ (detached).

        The layers are stacked into one tensor so the loss costs a few ops, not a few per layer.
        """
        stacked = torch.stack(outs)
        target = logits.detach().expand_as(stacked)
        if self.target == "logits":
            return (stacked - target).square().sum() / logits.shape[0]
        log_p = F.log_softmax(target, -1)
        return (log_p.exp() * (log_p - F.log_softmax(stacked, -1))).sum() / logits.shape[0]

    def _jvp_loss(self, layer: int, h: torch.Tensor, net: BlockNet) -> torch.Tensor:
        """1 − cos(J_g u, J_down u) for a Gaussian probe u, both forward-mode (no backward pass).

        Tangents are centred over classes because the error e sums to zero, so a common shift
        of all logits never reaches the feedback.
        """
        u = torch.randn(h.shape, generator=self.generator, device=h.device, dtype=h.dtype)
        with torch.no_grad():
            _, t_true = jvp(lambda z: net.downstream(layer, z), (h,), (u,))
        _, t_sur = jvp(self.surrogates[layer], (h,), (u,))
        t_true = t_true - t_true.mean(1, keepdim=True)
        t_sur = t_sur - t_sur.mean(1, keepdim=True)
        return 1.0 - F.cosine_similarity(t_sur, t_true, dim=1, eps=1e-12).mean()

    def learn_and_feedback(
        self, hs: list[torch.Tensor], logits: torch.Tensor, e: torch.Tensor, net: BlockNet
    ) -> list[torch.Tensor]:
        """Feedback from the current surrogates, then accumulate the surrogate-loss gradients."""
        leaves, outs = self._outputs(hs)
        grads = torch.autograd.grad(
            outs, leaves, grad_outputs=[e.detach()] * len(outs), retain_graph=True
        )
        loss = self._fit_loss(outs, logits)
        if self.jvp_weight > 0:
            loss = loss + self.jvp_weight * sum(
                self._jvp_loss(i, h.detach(), net) for i, h in enumerate(hs)
            )
        loss.backward()
        return list(grads)


def build_feedback(
    method: str,
    shapes: list[tuple[int, ...]],
    n_classes: int,
    surrogate: dict,
    generator: torch.Generator,
) -> DirectFeedback | None:
    """Build the feedback rule for ``method`` (None for BP, which uses the true gradient).

    All rules draw the same B_l from ``generator`` first, so ``dfa``, ``linfa`` and a skip-started
    ``ndfa`` share one set of fixed matrices.
    """
    if method == "bp":
        return None
    matrices = draw_feedback_matrices(shapes, n_classes, generator)
    if method == "dfa":
        return FixedDFA(matrices)
    if method == "linfa":
        return LearnedFeedback([FlatLinear(b) for b in matrices], surrogate, generator)
    if method == "linfa_zero":
        return LearnedFeedback(
            [FlatLinear(torch.zeros_like(b)) for b in matrices], surrogate, generator
        )
    if method == "ndfa":
        surrogates = [
            NonlinearSurrogate(s, n_classes, surrogate["width"], b if surrogate["skip"] else None)
            for s, b in zip(shapes, matrices, strict=True)
        ]
        return LearnedFeedback(surrogates, surrogate, generator)
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")


def alignment(feedback: list[torch.Tensor], true_grads: list[torch.Tensor]) -> list[float]:
    """Per layer, cosine between the batch's feedback and its true BP gradient ∂L/∂h_l.

    Both are flattened over the whole evaluation batch (the quantity a weight update sums over),
    and compared in float64 so the diagnostic is exactly 1 for BP against itself.
    """
    return [
        float(
            F.cosine_similarity(
                d.detach().double().flatten(), g.detach().double().flatten(), dim=0, eps=1e-30
            )
        )
        for d, g in zip(feedback, true_grads, strict=True)
    ]
