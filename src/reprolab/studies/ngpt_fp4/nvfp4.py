"""NVFP4 fake quantisation of the three GEMMs of a linear layer, shared by the GPT and the nGPT.

NVFP4 stores a tensor as 4-bit E2M1 elements (sign, 2 exponent bits, 1 mantissa bit: magnitudes
{0, 0.5, 1, 1.5, 2, 3, 4, 6}), one E4M3 (FP8) decode scale per block of 16 consecutive elements,
and one FP32 decode scale per tensor. A value decodes as element · block scale · tensor scale.
The tensor scale maps the tensor's amax onto the largest value the block scales and elements can
encode together (448 · 6), so the E4M3 block scales are spent on the tensor's own range.

Blocks run along the reduction axis of the GEMM that consumes the operand. For a linear layer
y = x Wᵀ with x of shape (M, K) (M tokens), W of shape (N, K) and output gradient dY of shape
(M, N):

* Fprop  y  = Q(x along K) · Q(W along K)ᵀ;
* Dgrad  dX = Q(dY along N) · Q(W along N);
* Wgrad  dW = Q(dY along M)ᵀ · Q(X along M), optionally after a random Hadamard transform of
  both operands along M (it cancels in exact arithmetic and spreads outliers within a block).

This is an emulation: every function returns dequantised float values (what the hardware GEMM
would see), not packed 4-bit codes, and the GEMMs themselves run in the input's precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch.nn import functional as F

E2M1_MAX = 6.0
E4M3_MAX = 448.0
BLOCK = 16

# Which static scale of `Recipe.static_scales` an operand uses.
X, W, DY = 0, 1, 2


EXPONENT_BITS = 0x7F800000
"""The exponent field of a float32's bits: masking a value's bits with it keeps 2^⌊log2 |x|⌋."""


def _e2m1_step(magnitude: torch.Tensor) -> torch.Tensor:
    """The spacing of the E2M1 grid {0, 0.5, 1, 1.5, 2, 3, 4, 6} at each float32 magnitude in
    [0, 6]: 0.5 below 2, 1 below 4, 2 from 4 on.

    Within a binade [2^e, 2^(e+1)) E2M1 has one mantissa bit, so the spacing is 2^e / 2: read off
    the float32 exponent bits, then clamped to [0.5, 2] (below 1 the spacing stays that of the
    subnormal 0.5). One bit mask instead of nested comparisons: quantisation is the training
    step's hot loop.
    """
    power = (magnitude.view(torch.int32) & EXPONENT_BITS).view(torch.float32)
    return power.mul_(0.5).clamp_(0.5, 2.0)


def _round_magnitude_(magnitude: torch.Tensor) -> torch.Tensor:
    """Round float32 magnitudes (≥ 0) to the E2M1 grid in place, nearest with ties to even,
    saturating at 6 (`round_e2m1`)."""
    magnitude.clamp_(max=E2M1_MAX)
    step = _e2m1_step(magnitude)
    return magnitude.div_(step).round_().mul_(step)


def _stochastic_magnitude_(magnitude: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Round float32 magnitudes (≥ 0) to an E2M1 neighbour in place, up with probability equal
    to the distance from the lower one in units of the spacing (`stochastic_e2m1`)."""
    magnitude.clamp_(max=E2M1_MAX)
    step = _e2m1_step(magnitude)
    units = magnitude.div_(step)
    lower = units.floor()
    draws = torch.rand(units.shape, generator=generator, device=units.device)
    return lower.add_(draws < units.sub_(lower)).mul_(step)


def round_e2m1(x: torch.Tensor) -> torch.Tensor:
    """Round to the nearest E2M1 value, the format's round-to-nearest (RTN) mode.

    Ties go to the neighbour with an even mantissa bit (0.25→0, 0.75→1, 1.25→1, 1.75→2, 2.5→2,
    3.5→4, 5→4), as IEEE round-half-to-even does; magnitudes beyond 6 saturate to ±6 instead of
    overflowing, since E2M1 has no infinity. Within each binade the grid is evenly spaced and
    its even-mantissa points are the even multiples of the spacing, so torch.round (half to
    even) of the magnitude in units of the spacing is exactly that rounding. Computed in
    float32, returned in x's dtype.
    """
    magnitude = x.abs().to(torch.float32)
    return _round_magnitude_(magnitude).copysign_(x).to(x.dtype)


def stochastic_e2m1(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Round stochastically to one of the two E2M1 neighbours, unbiased within ±6.

    A magnitude between neighbours lo < hi rounds up with probability (|x| − lo)/(hi − lo), so the
    expected result is x; magnitudes beyond 6 saturate to ±6. The uniform draws come from
    `generator` (on x's device), so a seeded generator makes the rounding reproducible.
    """
    magnitude = x.abs().to(torch.float32)
    return _stochastic_magnitude_(magnitude, generator).copysign_(x).to(x.dtype)


def to_e4m3(x: torch.Tensor) -> torch.Tensor:
    """Round to E4M3 (FP8, the block-scale format) and return the value as float32.

    Values are clamped to ±448 first, so out-of-range scales saturate rather than depend on how
    the cast treats overflow. Torch's cast to float8_e4m3fn rounds to nearest, ties to even, and
    keeps subnormals down to 2⁻⁹ (smaller values round to zero or 2⁻⁹).
    """
    return x.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).to(torch.float32)


class Encoded(NamedTuple):
    """An NVFP4 tensor in its three parts: decodes as elements · block scale · global scale."""

    elements: torch.Tensor
    """E2M1 values, with x's shape."""
    block_scales: torch.Tensor
    """E4M3 values, with x's shape except that the blocked axis is `block` times shorter."""
    global_scale: torch.Tensor
    """The per-tensor decode scale, a 0-d float32 tensor."""


def _blocks(x: torch.Tensor, axis: int, block: int) -> torch.Tensor:
    """x viewed as (before, size / block, block, after): the blocks along `axis` on dimension 2,
    everything before and after the axis flattened, so no element moves in memory."""
    axis %= x.dim()
    if x.shape[axis] % block:
        raise ValueError(
            f"NVFP4 blocks of {block} along axis {axis} need that axis's size to be a multiple "
            f"of {block}; the tensor has shape {tuple(x.shape)}"
        )
    before, after = math.prod(x.shape[:axis]), math.prod(x.shape[axis + 1 :])
    return x.reshape(before, x.shape[axis] // block, block, after)


def _in_shape_of(blocked: torch.Tensor, x: torch.Tensor, axis: int) -> torch.Tensor:
    """A `_blocks` layout (elements, or per-block values with a block dimension of 1) back in
    x's shape, the axis shortened for per-block values."""
    shape = list(x.shape)
    shape[axis] = blocked.shape[1] * blocked.shape[2]
    return blocked.reshape(shape)


def _encode_blocks(
    blocks: torch.Tensor,
    tensor_scale: bool,
    global_scale: float | None,
    stochastic: bool,
    generator: torch.Generator | None,
) -> Encoded:
    """Encode a `_blocks` layout; the parts come back in that layout (block scales with a
    block dimension of 1). Works on float32 copies of the values, in place."""
    if tensor_scale and global_scale is not None:
        raise ValueError("pass either tensor_scale=True or a fixed global_scale, not both")
    if stochastic and generator is None:
        raise ValueError("stochastic rounding needs a torch.Generator")
    magnitude = blocks.abs().to(torch.float32)
    block_amax = magnitude.amax(dim=2, keepdim=True)
    if global_scale is not None:
        scale = torch.tensor(global_scale, dtype=torch.float32, device=blocks.device)
    elif tensor_scale:
        amax = block_amax.amax()
        # An all-zero tensor keeps the scale 1: its blocks all get scale 0 and encode as zeros.
        scale = torch.where(amax > 0, amax / (E4M3_MAX * E2M1_MAX), 1.0)
    else:
        scale = torch.ones((), dtype=torch.float32, device=blocks.device)
    block_scales = to_e4m3(block_amax / (E2M1_MAX * scale))
    decode = block_scales * scale
    magnitude.div_(torch.where(decode > 0, decode, 1.0))
    if stochastic:
        elements = _stochastic_magnitude_(magnitude, generator)
    else:
        elements = _round_magnitude_(magnitude)
    return Encoded(elements.copysign_(blocks), block_scales, scale)


def encode(
    x: torch.Tensor,
    axis: int,
    *,
    tensor_scale: bool = True,
    global_scale: float | None = None,
    stochastic: bool = False,
    generator: torch.Generator | None = None,
    block: int = BLOCK,
) -> Encoded:
    """Split x into NVFP4's parts (elements, block scales, global scale), to inspect them.

    Takes the same arguments and makes the same choices as `quantize`, which decodes the parts.
    """
    parts = _encode_blocks(
        _blocks(x, axis, block), tensor_scale, global_scale, stochastic, generator
    )
    return Encoded(
        _in_shape_of(parts.elements, x, axis).to(x.dtype),
        _in_shape_of(parts.block_scales, x, axis),
        parts.global_scale,
    )


def quantize(
    x: torch.Tensor,
    axis: int,
    *,
    tensor_scale: bool = True,
    global_scale: float | None = None,
    stochastic: bool = False,
    generator: torch.Generator | None = None,
    block: int = BLOCK,
) -> torch.Tensor:
    """Fake-quantise x to NVFP4 with blocks of `block` consecutive elements along `axis`.

    `axis` should be the reduction axis of the GEMM that consumes x; its size must be a multiple
    of `block` (ValueError naming the shape otherwise). The global decode scale is
    amax(|x|)/(448·6) when `tensor_scale` (the format's per-tensor scale), the fixed
    `global_scale` when given (the static ablation; needs tensor_scale=False), and 1 otherwise.
    Each block's scale is the E4M3 rounding of amax(block)/(6·global scale); its elements are the
    E2M1 rounding of x/(block scale · global scale) (nearest-even, or stochastic with `generator`
    when `stochastic`), and 0 in blocks whose scale rounded to 0. Returns the decoded values
    elements · block scale · global scale, in x's shape and dtype.
    """
    parts = _encode_blocks(
        _blocks(x, axis, block), tensor_scale, global_scale, stochastic, generator
    )
    decoded = parts.elements.mul_(parts.block_scales).mul_(parts.global_scale)
    return _in_shape_of(decoded, x, axis).to(x.dtype)


def random_signs(generator: torch.Generator) -> torch.Tensor:
    """16 independent signs ±1 (float32, on the generator's device) for `hadamard_16`."""
    bits = torch.randint(0, 2, (BLOCK,), generator=generator, device=generator.device)
    return (2 * bits - 1).to(torch.float32)


def hadamard_16(signs: torch.Tensor) -> torch.Tensor:
    """The randomised Hadamard matrix H·diag(signs)/4, with H the 16×16 Sylvester matrix.

    Dividing by 4 = √16 makes it orthogonal; the random signs make the transform of a fixed
    vector differ between draws, so no input direction is systematically left spiky.
    """
    if signs.shape != (BLOCK,):
        raise ValueError(f"hadamard_16 needs {BLOCK} signs, got shape {tuple(signs.shape)}")
    sylvester = torch.ones(1, 1, dtype=signs.dtype, device=signs.device)
    pair = torch.tensor([[1.0, 1.0], [1.0, -1.0]], dtype=signs.dtype, device=signs.device)
    while sylvester.shape[0] < BLOCK:
        sylvester = torch.kron(pair, sylvester)
    return sylvester * signs / math.sqrt(BLOCK)


def rht(x: torch.Tensor, axis: int, matrix: torch.Tensor) -> torch.Tensor:
    """Multiply every block of consecutive elements along `axis` by `matrix` (block ← matrix·block).

    The block size is the matrix's; with an orthogonal matrix, `rht(rht(x, axis, m), axis, m.T)`
    restores x. The matrix is cast to x's dtype and device.
    """
    blocks = _blocks(x, axis, matrix.shape[0])
    return (matrix.to(device=x.device, dtype=x.dtype) @ blocks).reshape(x.shape)


@dataclass(frozen=True)
class Recipe:
    """How `nvfp4_linear` quantises the three GEMMs of a linear layer.

    `enabled` False computes in full precision (no quantisation at all). `tensor_scale` uses the
    per-tensor amax scale at every call. `static_headroom` instead freezes each operand's global
    scale at its first use (the static ablation; excludes `tensor_scale`): the tensor scale of
    a tensor `static_headroom` times the first one's amax, so later values may grow that much
    before they saturate, and values that shrink lose precision and in the end flush to zero.
    `hadamard` applies a random Hadamard transform to both Wgrad operands along the token axis;
    `stochastic` rounds the output gradient dY stochastically in both backward GEMMs (x and W
    always round to nearest).
    """

    enabled: bool = True
    tensor_scale: bool = True
    hadamard: bool = False
    stochastic: bool = False
    static_headroom: float | None = None

    def __post_init__(self) -> None:
        if self.tensor_scale and self.static_headroom is not None:
            raise ValueError("a Recipe takes tensor_scale or static_headroom, not both")
        if self.static_headroom is not None and self.static_headroom < 1:
            raise ValueError(f"static_headroom must be at least 1, got {self.static_headroom}")

    def scaling(
        self, operand: int, tensor: torch.Tensor, frozen: FrozenScales | None = None
    ) -> dict[str, bool | float | None]:
        """The global-scale arguments of `quantize` for operand `X`, `W` or `DY` (`tensor`):
        the per-tensor scale, or under `static_headroom` the operand's scale in `frozen`,
        frozen now if this is its first use."""
        if self.static_headroom is None:
            return {"tensor_scale": self.tensor_scale, "global_scale": None}
        if frozen is None:
            raise ValueError("a static recipe needs the layer's FrozenScales")
        return {"tensor_scale": False, "global_scale": frozen.scale(operand, tensor, self)}


class FrozenScales:
    """One layer's static global scales of x, W and dY, each set at its first use."""

    def __init__(self) -> None:
        self.scales: list[float | None] = [None, None, None]

    def scale(self, operand: int, tensor: torch.Tensor, recipe: Recipe) -> float:
        """The frozen scale of `operand`; at its first use the tensor scale of `tensor` times
        the recipe's headroom (1 for an all-zero tensor)."""
        if self.scales[operand] is None:
            amax = float(tensor.detach().abs().amax())
            headroom = recipe.static_headroom or 1.0
            self.scales[operand] = amax * headroom / (E4M3_MAX * E2M1_MAX) if amax > 0 else 1.0
        return self.scales[operand]


FP32 = Recipe(enabled=False, tensor_scale=False)
NVFP4 = Recipe()
NVFP4_RHT_SR = Recipe(hadamard=True, stochastic=True)


def recipe_named(name: str, static_headroom: float) -> Recipe:
    """The recipe of a table row: "fp32", "nvfp4" (plain: per-tensor scale, round to nearest,
    no Hadamard), "nvfp4_rht_sr" (plus the Hadamard transform on Wgrad and stochastic rounding
    of gradients) or "nvfp4_static" (scales frozen at the first step with `static_headroom`)."""
    recipes = {
        "fp32": FP32,
        "nvfp4": NVFP4,
        "nvfp4_rht_sr": NVFP4_RHT_SR,
        "nvfp4_static": Recipe(tensor_scale=False, static_headroom=static_headroom),
    }
    if name not in recipes:
        raise ValueError(f"unknown NVFP4 recipe {name!r}; expected one of {list(recipes)}")
    return recipes[name]


class _NVFP4Linear(torch.autograd.Function):
    """y = Q(x)·Q(W)ᵀ + b with quantised backward GEMMs; x is already flattened to (M, K)."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        x: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        recipe: Recipe,
        generator: torch.Generator,
        frozen: FrozenScales | None,
    ) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.recipe, ctx.generator, ctx.frozen = recipe, generator, frozen
        ctx.has_bias = bias is not None
        x_q = quantize(x, 1, **recipe.scaling(X, x, frozen))
        y = x_q @ quantize(weight, 1, **recipe.scaling(W, weight, frozen)).T
        return y if bias is None else y + bias

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, dy: torch.Tensor
    ) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        recipe, generator, frozen = ctx.recipe, ctx.generator, ctx.frozen
        rounding = {"stochastic": recipe.stochastic, "generator": generator}
        dy_scaling = {**recipe.scaling(DY, dy, frozen), **rounding}
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            w_q = quantize(weight, 0, **recipe.scaling(W, weight, frozen))
            dx = quantize(dy, 1, **dy_scaling) @ w_q
        if ctx.needs_input_grad[1]:
            dy_m, x_m = dy, x
            if recipe.hadamard:
                matrix = hadamard_16(random_signs(generator))
                dy_m, x_m = rht(dy, 0, matrix), rht(x, 0, matrix)
            x_q = quantize(x_m, 0, **recipe.scaling(X, x_m, frozen))
            dw = quantize(dy_m, 0, **dy_scaling).T @ x_q
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = dy.sum(0)
        return dx, dw, db, None, None, None


def nvfp4_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    recipe: Recipe,
    generator: torch.Generator,
    frozen: FrozenScales | None = None,
) -> torch.Tensor:
    """A linear layer y = x Wᵀ + b whose three GEMMs are NVFP4 fake-quantised per `recipe`.

    x has shape (..., K) and is flattened to M = prod(...) tokens; W has shape (N, K). Fprop
    blocks along K, Dgrad along N, Wgrad along M, so K, N and M must all be multiples of 16
    (checked here, ValueError naming the size). The bias and its gradient (dY summed over tokens)
    stay in full precision. `generator` (on x's device) draws the stochastic rounding and the
    Hadamard signs, fresh signs at every backward pass; `frozen` holds the layer's scales under
    a static recipe. With `recipe.enabled` False this is exactly `F.linear`.
    """
    if not recipe.enabled:
        return F.linear(x, weight, bias)
    flat = x.reshape(-1, x.shape[-1])
    sizes = {"K (in_features)": flat.shape[1], "N (out_features)": weight.shape[0]}
    sizes["M (tokens)"] = flat.shape[0]
    for name, size in sizes.items():
        if size % BLOCK:
            raise ValueError(
                f"NVFP4 blocks of {BLOCK} need {name} to be a multiple of {BLOCK}, got {size} "
                f"(x of shape {tuple(x.shape)}, weight of shape {tuple(weight.shape)})"
            )
    y = _NVFP4Linear.apply(flat, weight, bias, recipe, generator, frozen)
    return y.reshape(*x.shape[:-1], weight.shape[0])


class NVFP4Linear(torch.nn.Linear):
    """`torch.nn.Linear` whose forward is `nvfp4_linear` under the settable `recipe`.

    The recipe defaults to full precision ("fp32"), so the layer is a drop-in `nn.Linear` until a
    model switches it (`layer.recipe = recipe_named("nvfp4", ...)`); setting a recipe forgets
    the scales a static recipe froze before.

    It owns a torch.Generator seeded with `seed` for stochastic rounding and Hadamard signs; when
    the weight moves to another device, the generator is re-created there from the same seed.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        recipe: Recipe = FP32,
        seed: int = 0,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self.recipe = recipe
        self.seed = seed
        self.generator = torch.Generator(self.weight.device).manual_seed(seed)

    @property
    def recipe(self) -> Recipe:
        """How the layer's GEMMs are quantised."""
        return self._recipe

    @recipe.setter
    def recipe(self, recipe: Recipe) -> None:
        self._recipe = recipe
        self.frozen_scales = FrozenScales()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.generator.device != self.weight.device:
            self.generator = torch.Generator(self.weight.device).manual_seed(self.seed)
        return nvfp4_linear(
            x, self.weight, self.bias, self.recipe, self.generator, self.frozen_scales
        )

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, recipe={self.recipe}, seed={self.seed}"


def sqnr_db(x: torch.Tensor, xq: torch.Tensor) -> float:
    """Signal-to-quantisation-noise ratio 10·log10(Σx² / Σ(x − xq)²) in dB, summed in float64."""
    signal = x.double().square().sum()
    noise = (x.double() - xq.double()).square().sum()
    return float(10 * torch.log10(signal / noise))
