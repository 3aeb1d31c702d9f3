"""The mechanism the paper proposes, measured: how well a quantised dot product keeps its signal.

A forward GEMM entry is a dot product s = Σ_i x_i w_i of an input row x and a weight row w over
the hidden dimension d. Quantising both operands adds an error e = Σ_i (x̂_i ŵ_i − x_i w_i). Over
many (x, w) pairs of a layer:

* SNR = E[s²] / E[e²] (reported in dB);
* ρ̄, the mean correlation of the element-wise products p_i = x_i w_i across coordinates,
  weighted as they enter the sum: ρ̄ = (Var s − Σ_i Var p_i) / Σ_{i≠j} √(Var p_i Var p_j);
  ρ̄_e the same for the per-coordinate errors.

With uncorrelated errors (ρ̄_e ≈ 0) E[e²] grows like d while Var s grows like
d·(1 + (d − 1) ρ̄), so positively correlated products buy an SNR gain of about
10·log10(1 + (d − 1) ρ̄) dB: the paper's explanation of nGPT's robustness. `layer_stats`
samples (token, output unit) pairs of every block linear layer of a model on a batch, with both
operands quantised as the forward GEMM quantises them (blocks along d, the recipe's scales).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from reprolab.studies.ngpt_fp4.models import CharLM
from reprolab.studies.ngpt_fp4.nvfp4 import FrozenScales, NVFP4Linear, Recipe, W, X, quantize


@dataclass(frozen=True)
class DotStats:
    """A set of dot products' SNR (dB), product correlation ρ̄ and error correlation ρ̄_e."""

    snr_db: float
    rho: float
    rho_noise: float


def mean_correlation(terms: torch.Tensor) -> float:
    """ρ̄ of (pairs, d) summands: (Var Σ − Σ Var) / Σ_{i≠j} √(Var_i Var_j), the variances taken
    over pairs (float64)."""
    terms = terms.double()
    variances = terms.var(dim=0)
    total = terms.sum(dim=1).var()
    cross = variances.sqrt().sum() ** 2 - variances.sum()
    return float((total - variances.sum()) / cross)


def dot_stats(
    x: torch.Tensor, w: torch.Tensor, x_quantised: torch.Tensor, w_quantised: torch.Tensor
) -> DotStats:
    """The statistics of the dot products of paired rows x[p]·w[p] (P, d) against their
    quantised versions."""
    products = x.double() * w.double()
    errors = x_quantised.double() * w_quantised.double() - products
    signal, noise = products.sum(dim=1), errors.sum(dim=1)
    snr = float(signal.pow(2).mean() / noise.pow(2).mean())
    return DotStats(10 * math.log10(snr), mean_correlation(products), mean_correlation(errors))


def quantised_operands(
    inputs: torch.Tensor, weight: torch.Tensor, recipe: Recipe
) -> tuple[torch.Tensor, torch.Tensor]:
    """A forward GEMM's two operands as it quantises them under `recipe` (blocks along d; a
    static recipe's scales as if frozen on these operands)."""
    x_q = quantize(inputs, 1, **recipe.scaling(X, inputs, FrozenScales()))
    return x_q, quantize(weight, 1, **recipe.scaling(W, weight, FrozenScales()))


@torch.no_grad()
def layer_stats(
    model: CharLM, tokens: torch.Tensor, recipe: Recipe, pairs: int, generator: torch.Generator
) -> dict[str, DotStats]:
    """Per block linear layer, the statistics of `pairs` random (token, output unit) dot
    products of its forward GEMM on the (B, T) `tokens`, computed in full precision and with
    both operands quantised by `recipe` (the model itself runs unquantised)."""
    inputs: dict[str, torch.Tensor] = {}
    hooks = [
        module.register_forward_hook(
            lambda _m, args, _out, name=name: inputs.__setitem__(name, args[0].flatten(0, -2))
        )
        for name, module in model.named_modules()
        if isinstance(module, NVFP4Linear)
    ]
    try:
        model(tokens)
    finally:
        for hook in hooks:
            hook.remove()
    stats = {}
    for name, layer in model.named_modules():
        if name not in inputs:
            continue
        x, w = inputs[name], layer.weight
        x_q, w_q = quantised_operands(x, w, recipe)
        rows = torch.randint(0, len(x), (pairs,), generator=generator)
        units = torch.randint(0, len(w), (pairs,), generator=generator)
        stats[name] = dot_stats(x[rows], w[units], x_q[rows], w_q[units])
    return stats
