"""The normalizing trajectory model: a reverse chain whose every step is a conditional flow, and
its Gaussian-step special case.

p_θ(x_{t_0:t_K}) = N(x_{t_K}; 0, I) · ∏_k p_θ(x_{t_{k−1}} | x_{t_k:t_K}), where step k maps
x_{t_{k−1}} through an invertible transporter T_k(·; c_k) to u ~ N(μ_k, σ_k²), so
log p_θ(x_{t_{k−1}} | ·) = log N(T_k(x_{t_{k−1}}); μ_k, σ_k²) + log |det ∂T_k/∂x|: the exact
trajectory likelihood, trained by maximum likelihood on forward-chain trajectories. The contexts
c_1..c_K come from one parallel pass of a predictor over the trajectory's states.

Choices: each token is a linear embedding of x_{t_k} plus a sinusoidal embedding of t_k, then
residual MLP blocks; with `attention` one reverse-causal self-attention layer lets token k see
the noisier tokens j ≥ k only, which sampling (noisiest state first) has already drawn, so
teacher-forced training and sampling condition on the same states; without it c_k depends on
x_{t_k} alone (the Markov ablation; the true reverse chain of a Markov forward chain is Markov).
T_k is a chain of `couplings` affine or rational-quadratic spline couplings with alternating
masks (`coupling_mask`; each starts as the identity), one transporter per step; transporter
"identity" gives the Gaussian-step model with the same predictor and the same likelihood
training (Gauss-K).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional

from reprolab.models.draws import normal, sinusoidal_embedding
from reprolab.models.flows.base import Chain, Identity, Transform
from reprolab.models.flows.coupling import AffineCoupling, SplineCoupling, alternating_mask
from reprolab.studies.ntm.forward_chain import ForwardChain

TRANSPORTERS = ("identity", "affine", "spline")


class ResidualBlock(nn.Module):
    """x + Linear(SiLU(Linear(LayerNorm(x)))), per token."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.inner = nn.Linear(width, 2 * width)
        self.outer = nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block applied to every token of x (…, width)."""
        return x + self.outer(functional.silu(self.inner(self.norm(x))))


class ReverseCausalAttention(nn.Module):
    """Single-head self-attention over the K trajectory tokens in which token k attends to the
    tokens j ≥ k (the noisier states), with a residual connection."""

    def __init__(self, width: int, tokens: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.register_buffer("allowed", torch.ones(tokens, tokens, dtype=torch.bool).triu())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (batch, tokens, width) → the same shape."""
        q, k, v = self.qkv(self.norm(x)).chunk(3, -1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(x.shape[-1])
        weights = scores.masked_fill(~self.allowed, float("-inf")).softmax(-1)
        return x + self.out(weights @ v)


class Predictor(nn.Module):
    """H_φ: the states (batch, K, dim) at t_1..t_K → contexts (batch, K, context_dim)."""

    def __init__(
        self,
        dim: int,
        times: Sequence[float],
        width: int,
        blocks: int,
        context_dim: int,
        attention: bool,
    ) -> None:
        super().__init__()
        self.register_buffer("times", torch.tensor(list(times), dtype=torch.float32))
        self.embed = nn.Linear(dim, width)
        self.blocks = nn.ModuleList(ResidualBlock(width) for _ in range(blocks))
        self.attention = ReverseCausalAttention(width, len(times)) if attention else None
        self.head = nn.Linear(width, context_dim)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        """Contexts c_1..c_K of the states x_{t_1..t_K} (one pass over all tokens)."""
        h = self.embed(states) + sinusoidal_embedding(self.times, self.embed.out_features)
        middle = len(self.blocks) // 2
        for i, block in enumerate(self.blocks):
            if i == middle and self.attention is not None:
                h = self.attention(h)
            h = block(h)
        return self.head(h)


def transporter(
    kind: str, dim: int, couplings: int, hidden: Sequence[int], context_dim: int
) -> Transform:
    """T_k: `couplings` couplings of `kind` with alternating masks (the identity for
    "identity")."""
    if kind == "identity":
        return Identity()
    if kind not in TRANSPORTERS:
        raise ValueError(f"ntm: unknown transporter {kind!r}; expected one of {TRANSPORTERS}")
    layer = AffineCoupling if kind == "affine" else SplineCoupling
    return Chain(
        *[
            layer(coupling_mask(dim, i), hidden=hidden, context_dim=context_dim)
            for i in range(couplings)
        ]
    )


def coupling_mask(dim: int, index: int) -> torch.Tensor:
    """The kept dimensions of the index-th coupling: even and odd ones in turn; in 1-D none (the
    coupling is then a 1-D flow conditioned on the context alone)."""
    if dim == 1:
        return torch.zeros(1, dtype=torch.bool)
    return alternating_mask(dim, index % 2)


class TrajectoryModel(nn.Module):
    """The reverse chain p_θ on the forward chain's grid (see the module docstring)."""

    def __init__(
        self,
        dim: int,
        chain: ForwardChain,
        transporter_kind: str,
        couplings: int = 4,
        coupling_hidden: Sequence[int] = (64, 64),
        context_dim: int = 32,
        width: int = 128,
        blocks: int = 3,
        attention: bool = True,
    ) -> None:
        super().__init__()
        self.dim, self.chain = dim, chain
        self.predictor = Predictor(dim, chain.times[1:], width, blocks, context_dim, attention)
        self.gaussian = nn.Linear(context_dim, 2 * dim)
        self.transporters = nn.ModuleList(
            transporter(transporter_kind, dim, couplings, coupling_hidden, context_dim)
            for _ in range(chain.steps)
        )

    def _step_gaussian(self, context: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.gaussian(context).chunk(2, -1)
        return mean, log_std

    def step_log_prob(self, k: int, before: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """log p_θ(x_{t_{k−1}} = before | c_k = context) per sample, for k in 1..K."""
        mean, log_std = self._step_gaussian(context)
        u, log_det = self.transporters[k - 1](before, context)
        z = (u - mean) * torch.exp(-log_std)
        gaussian = -0.5 * z.square() - log_std - 0.5 * math.log(2 * math.pi)
        return gaussian.sum(-1) + log_det

    def step_log_probs(self, states: Sequence[torch.Tensor]) -> torch.Tensor:
        """(batch, K): log p_θ(x_{t_{k−1}} | x_{t_k:t_K}) of a trajectory [x_{t_0}, …, x_{t_K}],
        every context from one pass of the predictor."""
        contexts = self.predictor(torch.stack(list(states[1:]), 1))
        return torch.stack(
            [
                self.step_log_prob(k, states[k - 1], contexts[:, k - 1])
                for k in range(1, self.chain.steps + 1)
            ],
            1,
        )

    def trajectory_log_prob(self, states: Sequence[torch.Tensor]) -> torch.Tensor:
        """log p_θ(x_{t_0:t_K}) per sample: the exact trajectory log-likelihood (prior at t_K
        included)."""
        last = states[-1]
        prior = (-0.5 * last.square() - 0.5 * math.log(2 * math.pi)).sum(-1)
        return prior + self.step_log_probs(states).sum(-1)

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator) -> list[torch.Tensor]:
        """A sampled trajectory [x_{t_0}, …, x_{t_K}] of n samples: x_{t_K} ~ N(0, I), then K
        steps, each one predictor pass (the unknown cleaner tokens are zeros, which the
        reverse-causal mask hides) and one transporter inverse: NFE = K."""
        steps = self.chain.steps
        like = self.gaussian.weight
        states = like.new_zeros(n, steps, self.dim)
        states[:, -1] = normal((n, self.dim), generator, like)
        trajectory = [states[:, -1].clone()]
        for k in range(steps, 0, -1):
            context = self.predictor(states)[:, k - 1]
            mean, log_std = self._step_gaussian(context)
            u = mean + log_std.exp() * normal((n, self.dim), generator, like)
            before = self.transporters[k - 1].inverse(u, context)[0]
            if k > 1:
                states[:, k - 2] = before
            trajectory.insert(0, before)
        return trajectory
