"""NVFP4 fake quantisation: E2M1 rounding (nearest-even ties, saturation, unbiased stochastic
rounding), E4M3 block scales, block and tensor scale selection, the SQNR of a Gaussian, the
random Hadamard transform and its cancellation in Wgrad, and the quantised linear layer."""

from __future__ import annotations

import math
import re

import pytest
import torch
from torch.nn import functional as F

from reprolab.studies.ngpt_fp4.nvfp4 import (
    FrozenScales,
    NVFP4Linear,
    Recipe,
    X,
    encode,
    hadamard_16,
    nvfp4_linear,
    quantize,
    random_signs,
    recipe_named,
    rht,
    round_e2m1,
    sqnr_db,
    stochastic_e2m1,
    to_e4m3,
)

pytestmark = pytest.mark.usefixtures("torch_one_thread")

GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
TIES = {0.25: 0.0, 0.75: 1.0, 1.25: 1.0, 1.75: 2.0, 2.5: 2.0, 3.5: 4.0, 5.0: 4.0}


def generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_e2m1_grid_points_are_fixed_points():
    grid = torch.tensor(GRID)
    assert torch.equal(round_e2m1(grid), grid)
    assert torch.equal(round_e2m1(-grid), -grid)


def test_e2m1_ties_go_to_the_even_mantissa():
    ties = torch.tensor(list(TIES))
    expected = torch.tensor(list(TIES.values()))
    assert torch.equal(round_e2m1(ties), expected)
    assert torch.equal(round_e2m1(-ties), -expected)


def test_e2m1_rounds_to_nearest_off_ties_and_saturates():
    x = torch.tensor([0.26, 0.74, 1.3, 2.4, 2.6, 4.9, 5.1, 6.5, 7.0, 1e6])
    expected = torch.tensor([0.5, 0.5, 1.5, 2.0, 3.0, 4.0, 6.0, 6.0, 6.0, 6.0])
    assert torch.equal(round_e2m1(x), expected)
    assert torch.equal(round_e2m1(-x), -expected)


def test_e4m3_matches_the_float8_cast_and_clamps():
    sweep = torch.cat(
        [torch.arange(0, 64) * 2.0**-9, torch.linspace(-460.0, 460.0, 2001), torch.tensor([1e-4])]
    )
    clamped = sweep.clamp(-448.0, 448.0)
    assert torch.equal(to_e4m3(sweep), clamped.to(torch.float8_e4m3fn).to(torch.float32))
    # Multiples of 2⁻⁹ below the smallest normal 2⁻⁶ are the subnormals: exactly representable.
    subnormals = torch.arange(0, 8) * 2.0**-9
    assert torch.equal(to_e4m3(subnormals), subnormals)
    assert torch.equal(to_e4m3(torch.tensor([1000.0, -1000.0])), torch.tensor([448.0, -448.0]))


def test_block_scale_is_the_power_of_two_that_fits_the_block_amax():
    # The first block's amax 84 makes the tensor scale 84/(448·6) = 2⁻⁵ exactly; the second
    # block's amax 6·2⁻⁵·2⁻³ must get block scale 2⁻³ and survive quantisation exactly.
    s_g, k = 2.0**-5, -3
    unit = s_g * 2.0**k
    first = torch.full((16,), 1.0)
    first[0] = 84.0
    second = torch.zeros(16)
    second[:4] = torch.tensor([6.0, -0.5, 0.25, 3.0]) * unit
    x = torch.cat([first, second])
    parts = encode(x, 0)
    assert parts.global_scale.item() == s_g
    assert torch.equal(parts.block_scales, torch.tensor([448.0, 2.0**k]))
    out = quantize(x, 0)
    assert out[16] == 6.0 * unit and out[17] == -0.5 * unit
    assert out[18] == 0.0  # 0.25 units is a tie, which goes to 0
    assert out[19] == 3.0 * unit


def test_blocks_run_along_the_given_axis():
    # Column j holds 2^(j-6) and -1.5·2^(j-6): blocked along the columns (axis 0) every block
    # scale is a power of two from 2⁻⁸ to 2⁷ and every block is exact; blocked along the rows
    # (axis 1) the block scale is 2⁷ and the small columns flush to zero next to the big ones.
    magnitudes = 2.0 ** (torch.arange(16.0) - 6)
    x = torch.tensor([1.0, -1.5] * 8)[:, None] * magnitudes[None, :]
    along_columns = quantize(x, 0, tensor_scale=False)
    assert torch.equal(along_columns, x)
    assert torch.equal(quantize(x.T, 1, tensor_scale=False), along_columns.T)
    assert encode(x, 0, tensor_scale=False).block_scales.shape == (1, 16)
    assert encode(x, 1, tensor_scale=False).block_scales.shape == (16, 1)
    assert torch.all(quantize(x, 1, tensor_scale=False)[:, 0] == 0)


def test_size_along_the_axis_must_be_a_multiple_of_16():
    with pytest.raises(ValueError, match=r"\(16, 24\)"):
        quantize(torch.randn(16, 24), 1)


def test_tensor_scale_makes_quantisation_scale_invariant():
    x = torch.randn(8, 64, generator=generator(1))
    assert torch.equal(quantize(x * 2.0**10, 1), quantize(x, 1) * 2.0**10)


def test_without_tensor_scale_tiny_tensors_flush_to_zero():
    # Without a tensor scale the block scale is amax(block)/6 ≈ 6e-5 here, below half of E4M3's
    # smallest subnormal 2⁻⁹ ≈ 2e-3: the block scales round to 0 and the whole tensor is lost,
    # while the per-tensor scale keeps it at the usual ~20 dB.
    x = 1e-4 * torch.randn(16, 64, generator=generator(2))
    flushed = quantize(x, 1, tensor_scale=False)
    assert flushed.abs().max() <= 1e-6
    assert sqnr_db(x, quantize(x, 1)) > 18.0


def test_all_zeros_stay_zeros():
    zeros = torch.zeros(4, 32)
    for tensor_scale in (True, False):
        out = quantize(zeros, 1, tensor_scale=tensor_scale)
        assert torch.equal(out, zeros)


def test_sqnr_of_a_gaussian():
    x = torch.randn(65536, generator=generator(3))
    assert sqnr_db(x, quantize(x, 0)) == pytest.approx(20.4, abs=0.3)


def test_static_scale_excludes_the_tensor_scale():
    with pytest.raises(ValueError, match="not both"):
        quantize(torch.ones(16), 0, global_scale=1.0)
    with pytest.raises(ValueError, match="not both"):
        Recipe(static_headroom=4.0)
    # A fixed global scale of 2⁻⁵ behaves as the tensor scale of a tensor with amax 84.
    x = torch.randn(64, generator=generator(4))
    x = x / x.abs().max() * 84.0
    assert torch.equal(quantize(x, 0, tensor_scale=False, global_scale=2.0**-5), quantize(x, 0))


@pytest.mark.parametrize("value", [0.7, 2.6, 5.3])
def test_stochastic_rounding_is_unbiased(value):
    draws = stochastic_e2m1(torch.full((100_000,), value), generator(5))
    lo = max(g for g in GRID if g <= value)
    hi = min(g for g in GRID if g >= value)
    assert set(draws.unique().tolist()) == {lo, hi}
    standard_error = draws.std().item() / math.sqrt(draws.numel())
    assert abs(draws.mean().item() - value) < 3 * standard_error
    negative = stochastic_e2m1(torch.full((100_000,), -value), generator(5))
    assert torch.equal(negative, -draws)


def test_stochastic_rounding_is_deterministic_and_saturates():
    x = 8 * torch.randn(4096, generator=generator(6))
    first, second = stochastic_e2m1(x, generator(7)), stochastic_e2m1(x, generator(7))
    assert torch.equal(first, second)
    assert not torch.equal(first, stochastic_e2m1(x, generator(8)))
    assert first.abs().max() == 6.0
    assert torch.equal(stochastic_e2m1(torch.tensor(GRID), generator(7)), torch.tensor(GRID))
    with pytest.raises(ValueError, match="Generator"):
        quantize(x, 0, stochastic=True)


def test_hadamard_is_orthogonal_and_rht_inverts():
    signs = random_signs(generator(9))
    assert set(signs.tolist()) == {-1.0, 1.0}
    matrix = hadamard_16(signs)
    assert torch.allclose(matrix @ matrix.T, torch.eye(16), atol=1e-6)
    x = torch.randn(48, 8, generator=generator(10))
    spread = rht(x, 0, matrix)
    assert not torch.allclose(spread, x)
    assert torch.allclose(rht(spread, 0, matrix.T), x, atol=1e-6)
    # Each block of 16 along the axis is transformed on its own.
    assert torch.allclose(spread[16:32], matrix @ x[16:32], atol=1e-6)


def test_hadamard_cancels_in_wgrad():
    matrix = hadamard_16(random_signs(generator(11))).double()
    dy = torch.randn(64, 24, generator=generator(12), dtype=torch.float64)
    x = torch.randn(64, 32, generator=generator(13), dtype=torch.float64)
    transformed = rht(dy, 0, matrix).T @ rht(x, 0, matrix)
    assert torch.allclose(transformed, dy.T @ x, atol=1e-5)


def linear_case(seed: int = 14) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = generator(seed)
    x = torch.randn(4, 8, 64, generator=g)
    weight = 0.1 * torch.randn(48, 64, generator=g)
    bias = torch.randn(48, generator=g)
    return x, weight, bias


def gradients(recipe: Recipe, seed: int = 0) -> tuple[torch.Tensor, ...]:
    x, weight, bias = (t.requires_grad_() for t in linear_case())
    upstream = torch.randn(4, 8, 48, generator=generator(15))
    if recipe.enabled:
        y = nvfp4_linear(x, weight, bias, recipe, generator(seed), FrozenScales())
    else:
        y = F.linear(x, weight, bias)
    y.backward(upstream)
    return y.detach(), x.grad, weight.grad, bias.grad


def test_disabled_recipe_is_exactly_f_linear():
    x, weight, bias = (t.requires_grad_() for t in linear_case())
    upstream = torch.randn(4, 8, 48, generator=generator(15))
    y = nvfp4_linear(x, weight, bias, recipe_named("fp32", 16.0), generator())
    y.backward(upstream)
    got = y.detach(), x.grad, weight.grad, bias.grad
    for ours, reference in zip(
        got, gradients(Recipe(enabled=False, tensor_scale=False)), strict=True
    ):
        assert torch.equal(ours, reference)


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).norm() / b.norm()).item()


@pytest.mark.parametrize("name", ["nvfp4", "nvfp4_rht_sr"])
def test_quantised_linear_is_close_to_full_precision(name):
    reference = gradients(recipe_named("fp32", 16.0))
    quantised = gradients(recipe_named(name, 16.0))
    assert all(torch.isfinite(t).all() for t in quantised)
    assert relative_error(quantised[0], reference[0]) < 0.2
    assert relative_error(quantised[1], reference[1]) < 0.3
    assert relative_error(quantised[2], reference[2]) < 0.3
    assert torch.allclose(quantised[3], reference[3], atol=1e-5)


def test_stochastic_recipe_is_deterministic_per_seed():
    first, again = (
        gradients(recipe_named("nvfp4_rht_sr", 16.0), 3),
        gradients(recipe_named("nvfp4_rht_sr", 16.0), 3),
    )
    other = gradients(recipe_named("nvfp4_rht_sr", 16.0), 4)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[2], other[2])


def test_static_recipe_runs():
    y, dx, dw, db = gradients(recipe_named("nvfp4_static", 16.0))
    assert all(torch.isfinite(t).all() for t in (y, dx, dw, db))


def test_static_scales_freeze_at_first_use_with_headroom():
    recipe, frozen = recipe_named("nvfp4_static", 4.0), FrozenScales()
    x = torch.randn(16, 64, generator=generator(17))
    # The first tensor sets the scale of a tensor four times its amax: two binades to spare.
    first = quantize(x, 1, **recipe.scaling(X, x, frozen))
    assert frozen.scales[X] == pytest.approx(4.0 * x.abs().max().item() / (448 * 6))
    assert sqnr_db(x, first) > 17.0
    # A tensor grown 16x later saturates at the frozen range (4x the first amax)...
    grown = quantize(16 * x, 1, **recipe.scaling(X, 16 * x, frozen))
    assert grown.abs().max().item() == pytest.approx(4 * x.abs().max().item(), rel=0.1)
    # ...and one shrunk a millionfold flushes to zero, where the per-tensor scale keeps it.
    tiny = 1e-6 * x
    assert torch.all(quantize(tiny, 1, **recipe.scaling(X, tiny, frozen)) == 0)
    assert sqnr_db(tiny, quantize(tiny, 1)) > 17.0
    with pytest.raises(ValueError, match="FrozenScales"):
        recipe.scaling(X, x)
    with pytest.raises(ValueError, match="at least 1"):
        Recipe(tensor_scale=False, static_headroom=0.5)


def test_setting_a_recipe_forgets_frozen_scales():
    layer = NVFP4Linear(64, 48, recipe=recipe_named("nvfp4_static", 16.0))
    layer(torch.randn(16, 64, generator=generator(18)))
    assert layer.frozen_scales.scales[X] is not None
    layer.recipe = recipe_named("nvfp4_static", 16.0)
    assert layer.frozen_scales.scales == [None, None, None]


@pytest.mark.parametrize(
    ("shape", "weight_shape", "message"),
    [
        ((32, 24), (48, 24), "K (in_features) to be a multiple of 16, got 24"),
        ((32, 64), (40, 64), "N (out_features) to be a multiple of 16, got 40"),
        ((3, 7, 64), (48, 64), "M (tokens) to be a multiple of 16, got 21"),
    ],
)
def test_sizes_must_be_multiples_of_16(shape, weight_shape, message):
    x, weight = torch.randn(shape), torch.randn(weight_shape)
    with pytest.raises(ValueError, match=re.escape(message)):
        nvfp4_linear(x, weight, None, recipe_named("nvfp4", 16.0), generator())


def test_module_holds_recipe_and_generator():
    layer = NVFP4Linear(64, 48, seed=1)
    x = torch.randn(2, 16, 64, generator=generator(16))
    assert torch.equal(layer(x), F.linear(x, layer.weight, layer.bias))
    layer.recipe = recipe_named("nvfp4", 16.0)
    y = layer(x)
    assert y.shape == (2, 16, 48)
    direct = nvfp4_linear(x, layer.weight, layer.bias, recipe_named("nvfp4", 16.0), generator())
    assert torch.equal(y, direct)
    # The layer's own seeded generator drives stochastic rounding: equal seeds, equal gradients.
    twin = NVFP4Linear(64, 48, seed=1, recipe=recipe_named("nvfp4_rht_sr", 16.0))
    twin.load_state_dict(layer.state_dict())
    layer.recipe = recipe_named("nvfp4_rht_sr", 16.0)
    for module in (layer, twin):
        module(x).square().sum().backward()
    assert torch.equal(layer.weight.grad, twin.weight.grad)
