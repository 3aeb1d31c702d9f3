"""Temporal sensitivity, linear CKA, block tokens and the two boundary rules."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.studies.strap.backbone import blocks
from reprolab.studies.strap.sensitivity import (
    block_tokens,
    cka_sensitivity,
    linear_cka,
    normalised,
    segment_boundary,
    temporal_sensitivity,
    threshold_boundary,
)

from .conftest import TOKENS, WIDTH, random_clips

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _still_clips(batch: int, frames: int, seed: int) -> torch.Tensor:
    """Clips whose frames are all the same image."""
    first = random_clips(batch, 1, seed)
    return first.expand(-1, frames, -1, -1, -1).contiguous()


# block tokens


def test_block_tokens_shapes_and_no_hook_left(vit):
    tokens = block_tokens(vit, random_clips(2, 3, seed=0))
    assert len(tokens) == len(blocks(vit)) == 3
    for layer in tokens:
        assert layer.shape == (2, 3, TOKENS, WIDTH)
    assert all(len(layer._forward_hooks) == 0 for layer in blocks(vit))


def test_block_tokens_removes_its_hooks_when_the_forward_fails(vit):
    bad = torch.zeros(1, 2, 3, 15, 15)  # the wrong image size: the embedding raises
    with pytest.raises(Exception):  # noqa: B017 - whatever transformers raises
        block_tokens(vit, bad)
    assert all(len(layer._forward_hooks) == 0 for layer in blocks(vit))


def test_block_tokens_frames_are_per_image(vit):
    clips = random_clips(2, 3, seed=1)
    tokens = block_tokens(vit, clips)
    alone = block_tokens(vit, clips[1:2, 2:3])
    for layer, single in zip(tokens, alone, strict=True):
        torch.testing.assert_close(layer[1:2, 2:3], single, atol=1e-5, rtol=1e-5)


# temporal sensitivity and CKA


def test_identical_frames_have_zero_temporal_sensitivity(vit):
    ts = temporal_sensitivity(block_tokens(vit, _still_clips(2, 4, seed=0)))
    assert ts.shape == (3,)
    np.testing.assert_allclose(ts, 0.0, atol=1e-9)


def test_changing_frames_have_positive_temporal_sensitivity(vit):
    ts = temporal_sensitivity(block_tokens(vit, random_clips(2, 4, seed=0)))
    assert ts.shape == (3,)
    assert np.all(ts > 0) and np.all(np.isfinite(ts))


def test_temporal_sensitivity_of_constructed_tokens():
    # one clip, two frames, two patch tokens (plus a CLS token that must be ignored), d = 1:
    # frame 0 patches (0, 2), frame 1 patches (1, 3): every patch moves by 1 between frames;
    # the mean patch is 1.5, the squared deviations 2.25, 0.25, 0.25, 2.25 (mean 1.25)
    layer = torch.tensor([[[[100.0], [0.0], [2.0]], [[-50.0], [1.0], [3.0]]]])
    assert temporal_sensitivity([layer])[0] == pytest.approx(1.0 / 1.25)


def test_identical_frames_have_zero_cka_sensitivity(vit):
    cka = cka_sensitivity(block_tokens(vit, _still_clips(2, 3, seed=0)))
    assert cka.shape == (3,)
    np.testing.assert_allclose(cka, 0.0, atol=1e-9)


def test_changing_frames_have_positive_cka_sensitivity(vit):
    cka = cka_sensitivity(block_tokens(vit, random_clips(2, 3, seed=0)))
    assert np.all(cka > 1e-6) and np.all(cka <= 1.0 + 1e-9)


def _orthogonal(size: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(size, size, generator=generator, dtype=torch.float64))
    return q


def test_linear_cka_of_a_matrix_with_itself_is_one():
    x = torch.randn(10, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)


def test_linear_cka_is_invariant_to_rotation_and_isotropic_scaling():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(12, 5, generator=generator, dtype=torch.float64)
    y = torch.randn(12, 5, generator=generator, dtype=torch.float64)
    q = _orthogonal(5, seed=1)
    assert linear_cka(x, 3.5 * x @ q) == pytest.approx(1.0, abs=1e-12)
    reference = linear_cka(x, y)
    assert 0.0 < reference < 1.0
    assert linear_cka(x @ q, y) == pytest.approx(reference, abs=1e-12)
    assert linear_cka(0.01 * x, 40.0 * y @ _orthogonal(5, seed=2)) == pytest.approx(
        reference, abs=1e-12
    )
    assert linear_cka(y, x) == pytest.approx(reference, abs=1e-12)  # symmetric


def test_linear_cka_centres_the_rows():
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert linear_cka(x, x + 7.0) == pytest.approx(1.0, abs=1e-12)


# boundary rules


def _step(layers: int, k: int, low: float = 0.0, high: float = 1.0) -> list[float]:
    return [low] * k + [high] * (layers - k)


@pytest.mark.parametrize("layers", [2, 3, 5, 8, 12])
def test_segment_boundary_finds_a_step(layers):
    for k in range(1, layers):
        assert segment_boundary(_step(layers, k)) == k
        assert segment_boundary(_step(layers, k, low=0.3, high=5.0)) == k
        assert segment_boundary(_step(layers, k, low=2.0, high=-1.0)) == k  # a falling step


def test_segment_boundary_on_a_noisy_step():
    rng = np.random.default_rng(0)
    curve = np.array(_step(12, 7)) + 0.05 * rng.standard_normal(12)
    assert segment_boundary(curve) == 7


def test_segment_boundary_on_a_rising_staircase():
    assert segment_boundary([0.0, 0.1, 0.2, 1.0, 1.1, 1.2]) == 3
    # three even steps: splits 2 and 4 tie, the deeper wins
    assert segment_boundary([0.0, 0.0, 1.0, 1.0, 2.0, 2.0]) == 4


@pytest.mark.parametrize(("layers", "expected"), [(4, 2), (5, 3), (6, 3), (7, 4)])
def test_segment_boundary_on_a_ramp_takes_the_middle_deeper_of_ties(layers, expected):
    assert segment_boundary(np.arange(layers, dtype=float)) == expected


@pytest.mark.parametrize("layers", [2, 3, 6, 12])
@pytest.mark.parametrize("value", [0.0, 0.37, 1e6])
def test_segment_boundary_on_a_flat_curve_is_the_deepest_split(layers, value):
    assert segment_boundary([value] * layers) == layers - 1


def test_segment_boundary_needs_two_blocks():
    with pytest.raises(ValueError, match="at least 2 blocks, got 1"):
        segment_boundary([0.5])


def test_threshold_boundary_first_block_reaching_kappa():
    curve = [0.0, 0.2, 0.6, 0.4, 1.0]
    assert threshold_boundary(curve, 0.5) == 2
    assert threshold_boundary(curve, 0.6) == 2  # reaching counts (≥)
    assert threshold_boundary(curve, 0.61) == 4
    assert threshold_boundary(curve, 0.1) == 1
    assert threshold_boundary(curve, 0.0) == 0
    assert threshold_boundary([10.0, 20.0, 30.0], 0.5) == 1  # on the normalised curve


@pytest.mark.parametrize("layers", [2, 6])
def test_threshold_boundary_on_a_flat_curve_is_no_temporal_block(layers):
    assert threshold_boundary([0.3] * layers, 0.5) == layers
    assert threshold_boundary([0.3] * layers, 1.0) == layers


def test_normalised():
    np.testing.assert_allclose(normalised([2.0, 4.0, 6.0, 3.0]), [0.0, 0.5, 1.0, 0.25])
    np.testing.assert_allclose(normalised([5.0, -5.0]), [1.0, 0.0])
    flat = normalised([0.7, 0.7, 0.7])
    assert flat.dtype == float
    np.testing.assert_array_equal(flat, np.zeros(3))
    assert normalised([1, 3]).dtype == float  # integer curves are scaled too
