"""The study's flatness measure: the top eigenvalue of the training loss's Hessian.

Sharpness is the largest-magnitude eigenvalue λ of the Hessian H of the mean training loss over
a fixed list of (inputs, targets) batches, taken with respect to all of the model's parameters.
It is found by power iteration on Hessian-vector products, never forming H:

* H v is the gradient of g·v, g the loss gradient built with `create_graph=True` (double
  backward). Each batch's loss is rebuilt and differentiated twice at every iteration and the
  products averaged, so memory stays that of one batch's double-backward graph whatever the
  number of batches (at the price of one forward per batch and iteration);
* the start vector is drawn on the CPU from a torch.Generator seeded with `seed`, in each
  parameter's dtype, then moved to its device: one seed gives one start on any device;
* each iteration normalises v, takes the Rayleigh quotient vᵀHv as the estimate (signed, so a
  dominant negative curvature shows as negative) and moves v to Hv/‖Hv‖. The dot products and
  norms are accumulated in float64. The per-iteration estimates come back with the result, and
  the relative change of the last one, to judge convergence.

The landscape is measured in full precision: the block linear layers are switched to the FP32
recipe (where `nvfp4_linear` is exactly `F.linear`, which supports double backward; the
quantised autograd Function does not), attention runs on PyTorch's math backend of
`scaled_dot_product_attention` (the fused flash and memory-efficient kernels, CPU's included,
have no double backward; the math backend computes the same attention from plain ops), and the
model runs in eval mode (there is no dropout, so this only fixes the mode). Afterwards each
layer gets back its own recipe and the very `FrozenScales` it had (setting a recipe would reset
them, so a static-recipe model would otherwise re-freeze its scales at its next step), and the
model its train/eval mode. Parameters are only read and `torch.autograd.grad` never writes
`.grad`, so both are left as they were.

All parameters, nGPT's included: nGPT normalises each head's queries and keys and each
block's output before using them, so its loss is unchanged when some weights are scaled
together: the rows of the fused projection that make one head's queries (or keys), or the
whole value, attention output or MLP down-projection. The loss is constant along such a
scaling direction u (the weights' own values in those entries), so its curvature there is
zero: uᵀHu = 0 (Hu is minus the loss gradient on those entries, so u is a null vector of H
at a stationary point). These flat directions add no curvature, so they do not raise the top
eigenvalue, and the largest-magnitude eigenvalue stays a measure comparable with GPT's. Its
magnitude does depend on the parametrisation (here nGPT's scales stored at 1/√d, models.py),
as any sharpness measure's does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from reprolab.studies.ngpt_fp4.models import CharLM
from reprolab.studies.ngpt_fp4.nvfp4 import FP32, FrozenScales, NVFP4Linear, Recipe
from reprolab.studies.ngpt_fp4.training import loss_of

Vector = list[torch.Tensor]
"""A vector in parameter space: one tensor per parameter, in the parameter's shape."""


@dataclass(frozen=True)
class Sharpness:
    """The top Hessian eigenvalue estimate (the last Rayleigh quotient), the estimate of every
    iteration in order, and |last − previous| / |last| (|previous| when the last is 0)."""

    eigenvalue: float
    estimates: list[float]
    relative_change: float


def dot(a: Vector, b: Vector) -> float:
    """Σ aᵢ·bᵢ over all entries of two parameter-space vectors, accumulated in float64."""
    return float(sum((x.double() * y.double()).sum() for x, y in zip(a, b, strict=True)))


def scaled(vector: Vector, factor: float) -> Vector:
    """`vector` times `factor`, entry by entry."""
    return [x * factor for x in vector]


def start_vector(parameters: Sequence[torch.Tensor], seed: int) -> Vector:
    """A standard normal vector in parameter space, drawn on the CPU from a generator seeded
    with `seed` (the same draw on every device), in each parameter's dtype and device."""
    generator = torch.Generator().manual_seed(seed)
    return [
        torch.randn(p.shape, generator=generator, dtype=p.dtype).to(p.device) for p in parameters
    ]


def hessian_vector_product(
    loss: Callable[[], torch.Tensor], parameters: Sequence[torch.Tensor], vector: Vector
) -> Vector:
    """H v for the Hessian of the scalar `loss()` with respect to `parameters`, by double
    backward: the gradient of g·v, with g = ∇loss built with `create_graph=True`. Parameters
    the loss (or its gradient) does not depend on get zeros. `loss` is called once, so every
    product rebuilds its own graph."""
    gradients = torch.autograd.grad(
        loss(), parameters, create_graph=True, allow_unused=True, materialize_grads=True
    )
    directional = sum((g * v).sum() for g, v in zip(gradients, vector, strict=True))
    if not directional.requires_grad:  # the loss is linear: H = 0
        return [torch.zeros_like(p) for p in parameters]
    products = torch.autograd.grad(
        directional, parameters, allow_unused=True, materialize_grads=True
    )
    return [product.detach() for product in products]


def power_iteration(
    hessian_times: Callable[[Vector], Vector], start: Vector, iterations: int
) -> Sharpness:
    """The largest-magnitude eigenvalue of the symmetric operator `hessian_times` by
    `iterations` (≥ 2) steps of power iteration from `start`: normalise v, estimate vᵀHv, move
    to Hv. A vector H maps to zero stays put (the estimate is then 0)."""
    if iterations < 2:
        raise ValueError(f"power iteration needs at least 2 iterations, got {iterations}")
    norm = dot(start, start) ** 0.5
    if norm == 0:
        raise ValueError("the start vector is zero")
    vector = scaled(start, 1.0 / norm)
    estimates = []
    for _ in range(iterations):
        product = hessian_times(vector)
        estimates.append(dot(vector, product))
        product_norm = dot(product, product) ** 0.5
        if product_norm > 0:
            vector = scaled(product, 1.0 / product_norm)
    last, previous = estimates[-1], estimates[-2]
    change = abs(last - previous) / abs(last) if last != 0 else abs(previous)
    return Sharpness(eigenvalue=last, estimates=estimates, relative_change=change)


def _layer_states(model: CharLM) -> list[tuple[NVFP4Linear, Recipe, FrozenScales]]:
    """Every block linear layer with its recipe and its frozen scales, to restore them."""
    return [
        (module, module.recipe, module.frozen_scales)
        for module in model.modules()
        if isinstance(module, NVFP4Linear)
    ]


def top_hessian_eigenvalue(
    model: CharLM,
    batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
    iterations: int,
    seed: int,
) -> Sharpness:
    """The sharpness of `model` (module docstring): the largest-magnitude eigenvalue of the
    Hessian of the mean of the `batches`' `loss_of` (the mean loss over all their tokens when
    the batches are of one size), with respect to all parameters, by `iterations` steps of
    power iteration from a start drawn with `seed`. Runs in full precision, eval mode and math
    attention; the model's recipes, frozen scales, mode, parameters and gradients are as before
    afterwards."""
    if not batches:
        raise ValueError("the sharpness needs at least one batch")
    parameters = [p for p in model.parameters() if p.requires_grad]
    layers = _layer_states(model)
    training = model.training

    def hessian_times(vector: Vector) -> Vector:
        total = [torch.zeros_like(p) for p in parameters]
        for inputs, targets in batches:
            product = hessian_vector_product(
                lambda: loss_of(model, inputs, targets),  # noqa: B023 (called at once)
                parameters,
                vector,
            )
            total = [t + q for t, q in zip(total, product, strict=True)]
        return scaled(total, 1.0 / len(batches))

    try:
        model.set_recipe(FP32)
        model.eval()
        with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH):
            return power_iteration(hessian_times, start_vector(parameters, seed), iterations)
    finally:
        for layer, recipe, frozen in layers:
            layer.recipe = recipe
            layer.frozen_scales = frozen
        model.train(training)
