"""The two in-context networks: the structured two-stage attention model and a generic one.

Both map (context x (B, n, D), context y (B, n), queries x (B, q, D)) to predictions (B, q).

`TwoStage` (the paper's construction, made concrete here):
* Stage 1, geometric preconditioner: one attention head with the exact Gaussian kernel of
  bandwidth h₁ = e^{c} h₂ (softmax attention with a key-norm bias, i.e. normalised weights)
  computes the local mean and covariance Ĉ of the context around each query. Its top-`m`
  eigenvectors give local coordinates, shrunk by the soft projector weights λ_k/(λ_k + τ h₁²)
  (the design card's prototype: the top eigenvectors work better than the full soft projector;
  m = 2 is the largest intrinsic dimension of the class). The eigenvectors are computed without
  gradient; the eigenvalues carry it.
* Stage 2, reduced local-polynomial solver: degree-2 features ψ_j = [1, u, vech(u uᵀ)] of
  the scaled coordinates u/h₂, Gaussian weights of bandwidth h₂ = e^{a} r_k^{b}, r_k the
  distance from the query to its k-th nearest context point (card: h₂ = h₀ n^{-b}; a global
  rule in n cannot follow the component's share of the prompt or its radius, which the
  oracle knows, and left a growing gap at large n in prototype runs). The weighted means of y
  and of the features are one attention read each; each of the `steps` layers is then one
  linear-attention layer performing one preconditioned gradient step on the centred
  least-squares problem Σ_j κ_j (y_j − ȳ − βᵀ(ψ_j − ψ̄))² + ridge |β|² (the von Oswald
  identity, `gd_step`; centring decouples the intercept and gives the same solution). The
  preconditioner is Jacobi (1/diagonal of the centred Gram matrix) times learned per-feature
  factors. With `exact=True` the solve is closed-form (the ablation). The output is the
  intercept ȳ − βᵀψ̄.
* Trainable: c, τ, a, b, the ridge, one step size per layer and the 5 preconditioner factors —
  22 numbers for 12 layers: a differentiable estimator tuned in context, as the design
  card's prototype advises at a CPU budget (docs/studies/icl_manifold.md).

`LinearTransformer` (the unstructured model): tokens [x, y, 0] for the context and [x, 0, 1]
for queries, a linear embedding, `layers` blocks of causal-free linear attention (elu + 1
feature map; every token reads the context tokens only, so queries never see each other),
each followed by a two-layer MLP, pre-norm residual; a linear read-out at the query tokens.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

FEATURES = 6


def gaussian_attention(xq: torch.Tensor, xc: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Normalised Gaussian weights (B, q, n): softmax of q·k/h² − |k|²/2h² over the context."""
    logits = (xq @ xc.transpose(1, 2) - 0.5 * (xc * xc).sum(-1)[:, None, :]) / (h * h)
    return torch.softmax(logits, dim=-1)


def quadratic_features(u: torch.Tensor) -> torch.Tensor:
    """[1, u₁, u₂, u₁², u₁u₂, u₂²] of (…, 2) coordinates."""
    u1, u2 = u[..., 0], u[..., 1]
    return torch.stack([torch.ones_like(u1), u1, u2, u1 * u1, u1 * u2, u2 * u2], dim=-1)


def gd_step(
    beta: torch.Tensor,
    psi: torch.Tensor,
    w: torch.Tensor,
    y: torch.Tensor,
    step: torch.Tensor,
    precond: torch.Tensor,
    ridge: torch.Tensor,
) -> torch.Tensor:
    """One preconditioned gradient step on Σ_j w_j (y_j − βᵀψ_j)²/2 + ridge·|β|²/2.

    Written as a linear attention: the value of token j is ψ_j (y_j − βᵀψ_j), its weight w_j.
    beta (B, q, F), psi (B, q, n, F), w (B, q, n), y (B, q, n), precond (B, q, F).
    """
    residual = y - (psi * beta[:, :, None, :]).sum(-1)
    grad = -(w[..., None] * residual[..., None] * psi).sum(2)
    return beta - step * precond * (grad + ridge * beta)


class TwoStage(nn.Module):
    """Geometric preconditioner + reduced local-polynomial GD solver (module docstring)."""

    def __init__(self, steps: int, exact: bool, init: dict[str, float]) -> None:
        super().__init__()
        self.exact = exact
        self.neighbours = int(init["neighbours"])
        self.log_h1_ratio = nn.Parameter(torch.tensor(math.log(init["h1_ratio"])))
        self.log_tau = nn.Parameter(torch.tensor(math.log(init["tau"])))
        self.log_h0 = nn.Parameter(torch.tensor(math.log(init["h0"])))
        self.rate = nn.Parameter(torch.tensor(float(init["rate"])))
        self.log_ridge = nn.Parameter(torch.tensor(math.log(init["ridge"])))
        self.steps = nn.Parameter(torch.full((steps,), float(init["step"])))
        self.log_precond = nn.Parameter(torch.zeros(FEATURES - 1))

    def bandwidth(self, xc: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Stage-2 bandwidth per query, h₂ = e^{a} r_k^{b}, r_k the distance to the k-th
        nearest context point (a local spacing that adapts to n, the component's share of the
        prompt and its radius), shape (B, q, 1)."""
        sq = ((xq[:, :, None, :] - xc[:, None, :, :]) ** 2).sum(-1)
        k = min(self.neighbours, xc.shape[1])
        spacing = torch.kthvalue(sq, k, dim=-1).values.clamp_min(1e-12).sqrt()
        return torch.exp(self.log_h0 + self.rate * torch.log(spacing))[..., None]

    def features(self, xc: torch.Tensor, xq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Stage 1 and the stage-2 design: features ψ (B, q, n, 6) and weights (B, q, n)."""
        h2 = self.bandwidth(xc, xq)
        h1 = h2 * torch.exp(self.log_h1_ratio)
        w1 = gaussian_attention(xq, xc, h1)
        mean = w1 @ xc  # (B, q, D)
        second = torch.einsum("bqn,bnd,bne->bqde", w1, xc, xc)
        cov = second - mean[..., :, None] * mean[..., None, :]
        eigvals = torch.linalg.eigvalsh(cov)[..., -2:].flip(-1).clamp_min(0.0)
        vectors = torch.linalg.eigh(cov.detach()).eigenvectors[..., -2:].flip(-1)
        shrink = eigvals / (eigvals + torch.exp(self.log_tau) * h1 * h1)
        diff = xc[:, None, :, :] - xq[:, :, None, :]
        u = (diff @ vectors) * shrink[:, :, None, :] / h2[..., None]
        return quadratic_features(u), gaussian_attention(xq, xc, h2)

    def forward(self, xc: torch.Tensor, yc: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Predictions (B, q) at the queries."""
        psi, w = self.features(xc, xq)
        ridge = torch.exp(self.log_ridge)
        if self.exact:
            gram = torch.einsum("bqnf,bqn,bqng->bqfg", psi, w, psi)
            penal = torch.ones(FEATURES)
            penal[0] = 0.0
            rhs = torch.einsum("bqnf,bqn,bn->bqf", psi, w, yc)
            # jitter relative to the design's scale: a fixed 1e-8 vanished in float32 next to a
            # large Gram matrix with a degenerate direction (a singular solve at smoke scale)
            scale = gram.diagonal(dim1=-2, dim2=-1).mean(-1)[..., None, None]
            system = gram + torch.diag(ridge * penal) + (1e-5 * scale + 1e-8) * torch.eye(FEATURES)
            return torch.linalg.solve(system, rhs[..., None])[..., 0, 0]
        # centred solver: the weighted mean of y and of the non-constant features are one
        # attention read each; GD then runs on the centred design, where the intercept no
        # longer couples to the other coefficients (the same least-squares solution).
        mean_psi = (w[..., None] * psi).sum(2)  # (B, q, F)
        centred = psi[..., 1:] - mean_psi[:, :, None, 1:]
        mean_y = w @ yc[..., None]  # (B, q, 1)
        resid_y = yc[:, None, :] - mean_y
        spread = torch.einsum("bqnf,bqn,bqnf->bqf", centred, w, centred)
        precond = torch.exp(self.log_precond) / (spread + ridge)
        beta = torch.zeros(psi.shape[0], psi.shape[1], FEATURES - 1)
        for step in self.steps:
            beta = gd_step(beta, centred, w, resid_y, step, precond, ridge)
        return mean_y[..., 0] - (beta * mean_psi[..., 1:]).sum(-1)


class LinearAttention(nn.Module):
    """One block: every token attends (elu + 1 linear attention) to the context tokens."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width)
        )

    def forward(self, tokens: torch.Tensor, n: int) -> torch.Tensor:
        """Update (B, n + q, width) tokens; the first n are the context."""
        b, t, width = tokens.shape
        q, k, v = self.qkv(self.norm1(tokens)).chunk(3, dim=-1)
        shape = (b, t, self.heads, width // self.heads)
        q, k, v = (z.reshape(shape).transpose(1, 2) for z in (q, k, v))
        q, k = F.elu(q) + 1.0, F.elu(k[:, :, :n]) + 1.0
        kv = k.transpose(-1, -2) @ v[:, :, :n]  # (B, H, e, e)
        norm = q @ k.sum(2, keepdim=True).transpose(-1, -2)  # (B, H, t, 1)
        att = (q @ kv / norm).transpose(1, 2).reshape(b, t, width)
        tokens = tokens + self.out(att)
        return tokens + self.mlp(self.norm2(tokens))


class LinearTransformer(nn.Module):
    """The unstructured in-context regressor (module docstring)."""

    def __init__(self, ambient_dim: int, width: int, layers: int, heads: int) -> None:
        super().__init__()
        self.embed = nn.Linear(ambient_dim + 2, width)
        self.blocks = nn.ModuleList(LinearAttention(width, heads) for _ in range(layers))
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 1))

    def forward(self, xc: torch.Tensor, yc: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Predictions (B, q) at the queries."""
        n = xc.shape[1]
        ctx = torch.cat([xc, yc[..., None], torch.zeros_like(yc)[..., None]], dim=-1)
        qry = torch.cat([xq, torch.zeros(*xq.shape[:2], 1), torch.ones(*xq.shape[:2], 1)], -1)
        tokens = self.embed(torch.cat([ctx, qry], dim=1))
        for block in self.blocks:
            tokens = block(tokens, n)
        return self.head(tokens[:, n:])[..., 0]
