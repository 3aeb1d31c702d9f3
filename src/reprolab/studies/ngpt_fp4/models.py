"""The two character-level language models the study trains: a standard pre-norm GPT and nGPT,
the normalised transformer whose weights and hidden states live on the unit hypersphere
(Loshchilov et al. 2024). `transformers` has no nGPT, so both are clean torch modules written
alike, differing only where the architectures differ:

* **GPT**: pre-RMSNorm blocks h ← h + attn(norm(h)), h ← h + mlp(norm(h)), a final RMSNorm;
  softmax scale 1/√d_head; trained with AdamW, weight decay, warm-up and a cosine schedule.
* **nGPT**: no norms; every block moves the hidden state along the sphere,
  h ← norm(h + |α| ⊙ (norm(block(h)) − h)), with learned per-dimension step sizes α (attention
  and MLP each); queries and keys normalised per head and scaled by a learned s_qk; softmax
  scale √d_head; the SwiGLU inputs scaled by s_uv·√d; logits scaled by a learned s_z; every
  matrix renormalised along the model dimension after each optimiser step
  (`normalize_weights`); Adam without weight decay or warm-up.

The learned scales follow the reference implementation's parametrisation: a parameter stored
at `1/√d` and multiplied by `init/(1/√d)` when used, so that Adam moves it at the same pace as
the weights. Both use rotary position embeddings and SwiGLU MLPs of width 4d, no biases, untied
embeddings. Every linear layer of the blocks (q, k, v, the attention output, the MLP's two
projections) is an `NVFP4Linear`, whose recipe decides whether its three GEMMs are quantised;
the embedding, the LM head, the attention products, norms and softmax stay in float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from reprolab.studies.ngpt_fp4.nvfp4 import NVFP4Linear, Recipe

ALPHA_INIT = 0.05
"""nGPT's initial step size of a block's update (the reference's value)."""


@dataclass(frozen=True)
class LMConfig:
    """A model's size: vocabulary, width d, layers, heads, context length, and whether it is
    nGPT (`normalized`) or GPT."""

    vocab: int
    hidden: int
    layers: int
    heads: int
    context: int
    normalized: bool

    @property
    def head_width(self) -> int:
        """d / heads; ValueError when the heads do not split d evenly."""
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} does not split into {self.heads} heads")
        return self.hidden // self.heads

    @property
    def base_scale(self) -> float:
        """1/√d: the initial weights' standard deviation and the scales' storage unit."""
        return self.hidden**-0.5


def unit(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """`x` scaled to unit L2 norm along `dim`."""
    return x / x.norm(dim=dim, keepdim=True)


class RMSNorm(nn.Module):
    """Root-mean-square normalisation with a learned gain (GPT only)."""

    def __init__(self, width: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class ScaledParameter(nn.Module):
    """A learned per-coordinate scale stored at `stored` and read as `value` · `init`/`stored`
    (the reference's parametrisation: module docstring)."""

    def __init__(self, width: int, init: float, stored: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.full((width,), stored))
        self.factor = init / stored

    def forward(self) -> torch.Tensor:
        return self.weight * self.factor


def rotary(x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding of (B, heads, T, h) queries or keys: each pair of coordinates
    (i, i + h/2) rotated by position · 10000^(−2i/h)."""
    width, length = x.shape[-1], x.shape[-2]
    steps = torch.arange(0, width, 2, dtype=torch.float32, device=x.device)
    frequencies = 10000.0 ** (-steps / width)
    angles = torch.arange(length, dtype=torch.float32, device=x.device)[:, None] * frequencies[None]
    cos, sin = angles.cos(), angles.sin()
    first, second = x[..., : width // 2], x[..., width // 2 :]
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


class Attention(nn.Module):
    """Causal self-attention; the q, k, v projections (one fused linear, as GPT-2's c_attn)
    and the output projection are NVFP4 linears."""

    def __init__(self, config: LMConfig, seed: int) -> None:
        super().__init__()
        d = config.hidden
        self.config = config
        self.qkv = NVFP4Linear(d, 3 * d, bias=False, seed=seed)
        self.out = NVFP4Linear(d, d, bias=False, seed=seed + 1)
        if config.normalized:
            self.s_qk = ScaledParameter(d, 1.0, config.base_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, d = x.shape
        heads, width = self.config.heads, self.config.head_width

        def split(states: torch.Tensor) -> torch.Tensor:
            return states.view(batch, length, heads, width).transpose(1, 2)

        q, k, v = (split(states) for states in self.qkv(x).chunk(3, dim=-1))
        q, k = rotary(q), rotary(k)
        if self.config.normalized:
            s_qk = self.s_qk().view(1, heads, 1, width)
            q, k = s_qk * unit(q), s_qk * unit(k)
            scale = math.sqrt(width)
        else:
            scale = 1.0 / math.sqrt(width)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
        return self.out(y.transpose(1, 2).reshape(batch, length, d))


class SwiGLU(nn.Module):
    """u ⊙ silu(v) of width 4d, projected back to d; nGPT scales u and v by s_uv·√d."""

    def __init__(self, config: LMConfig, seed: int) -> None:
        super().__init__()
        d, inner = config.hidden, 4 * config.hidden
        self.config = config
        self.up = NVFP4Linear(d, 2 * inner, bias=False, seed=seed)
        self.down = NVFP4Linear(inner, d, bias=False, seed=seed + 1)
        if config.normalized:
            self.s_uv = ScaledParameter(2 * inner, 1.0, 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        uv = self.up(x)
        if self.config.normalized:
            uv = uv * (self.s_uv() * math.sqrt(self.config.hidden))
        u, v = uv.chunk(2, dim=-1)
        return self.down(u * F.silu(v))


class Block(nn.Module):
    """One transformer block: pre-norm residual (GPT) or a step on the sphere (nGPT)."""

    def __init__(self, config: LMConfig, seed: int) -> None:
        super().__init__()
        self.config = config
        self.attention = Attention(config, seed)
        self.mlp = SwiGLU(config, seed + 2)
        if config.normalized:
            self.alpha_attention = ScaledParameter(config.hidden, ALPHA_INIT, config.base_scale)
            self.alpha_mlp = ScaledParameter(config.hidden, ALPHA_INIT, config.base_scale)
        else:
            self.norm_attention = RMSNorm(config.hidden)
            self.norm_mlp = RMSNorm(config.hidden)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if not self.config.normalized:
            h = h + self.attention(self.norm_attention(h))
            return h + self.mlp(self.norm_mlp(h))
        h = unit(h + self.alpha_attention().abs() * (unit(self.attention(h)) - h))
        return unit(h + self.alpha_mlp().abs() * (unit(self.mlp(h)) - h))


class CharLM(nn.Module):
    """GPT or nGPT (`config.normalized`) over characters: embedding, blocks, LM head."""

    def __init__(self, config: LMConfig, seed: int = 0) -> None:
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(config.vocab, config.hidden)
        self.blocks = nn.ModuleList(
            Block(config, seed + 4 * layer) for layer in range(config.layers)
        )
        self.head = nn.Linear(config.hidden, config.vocab, bias=False)
        if config.normalized:
            self.s_z = ScaledParameter(config.vocab, 1.0, config.base_scale)
        else:
            self.final_norm = RMSNorm(config.hidden)
        self._initialise()

    def _initialise(self) -> None:
        """N(0, 1/d) weights; the residual projections at 1/√(2·layers) of that (GPT-2's
        choice); nGPT's matrices then put on the sphere."""
        std = self.config.base_scale
        for name, parameter in self.named_parameters():
            if parameter.dim() == 2:
                residual = name.endswith(("out.weight", "down.weight"))
                scale = 1.0 / math.sqrt(2 * self.config.layers) if residual else 1.0
                nn.init.normal_(parameter, mean=0.0, std=std * scale)
        if self.config.normalized:
            normalize_weights(self)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-character logits (B, T, vocab) of (B, T) token ids."""
        h = self.embedding(tokens)
        for block in self.blocks:
            h = block(h)
        if self.config.normalized:
            return self.head(h) * self.s_z()
        return self.head(self.final_norm(h))

    def set_recipe(self, recipe: Recipe) -> None:
        """Quantise every block linear layer's GEMMs by `recipe`."""
        for module in self.modules():
            if isinstance(module, NVFP4Linear):
                module.recipe = recipe


@torch.no_grad()
def normalize_weights(model: CharLM) -> None:
    """nGPT's step after every optimiser update: each vector that lives in the model dimension
    back on the unit sphere: the rows of the embedding, the LM head and the matrices reading
    the hidden state (q, k, v, the MLP's up-projection), the columns of those writing it (the
    attention output, the MLP's down-projection)."""
    model.embedding.weight.copy_(unit(model.embedding.weight, dim=1))
    model.head.weight.copy_(unit(model.head.weight, dim=1))
    for block in model.blocks:
        attention, mlp = block.attention, block.mlp
        for reading in (attention.qkv, mlp.up):
            reading.weight.copy_(unit(reading.weight, dim=1))
        for writing in (attention.out, mlp.down):
            writing.weight.copy_(unit(writing.weight, dim=0))
