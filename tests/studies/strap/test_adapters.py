"""Adapters: zero-initialised identity, the temporal convolution's reach, placements and the
closed-form parameter counts."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from reprolab.studies.strap.adapters import (
    TEMPORAL_KERNEL,
    SpatialAdapter,
    TemporalAdapter,
    make_adapter,
    placement,
    placement_parameters,
    spatial_parameters,
    temporal_parameters,
)
from reprolab.studies.strap.workflow_io import ROWS

from .conftest import BOTTLENECK, WIDTH


def _tokens(clips: int, frames: int, seed: int = 0) -> torch.Tensor:
    """Block tokens [clips * frames, N=5, d] with each clip's frames consecutive."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(clips * frames, 5, WIDTH, generator=generator)


def _randomise_up(adapter: nn.Module, seed: int = 1) -> None:
    """Give W_up random values, as training would: the adapter is no longer the identity."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        adapter.up.weight.copy_(torch.randn(adapter.up.weight.shape, generator=generator))
        adapter.up.bias.copy_(torch.randn(adapter.up.bias.shape, generator=generator))


def _count(module: nn.Module) -> int:
    return sum(w.numel() for w in module.parameters())


@pytest.mark.parametrize("conv_std", [1e-3, 0.5, 3.0, 100.0])
def test_zero_initialised_temporal_adapter_is_the_identity(conv_std):
    torch.manual_seed(0)
    adapter = TemporalAdapter(WIDTH, BOTTLENECK, conv_std)
    assert adapter.conv.weight.abs().sum() > 0  # the convolution itself is not zero
    tokens = _tokens(clips=2, frames=4)
    assert torch.equal(adapter(tokens, 4), tokens)


def test_zero_initialised_spatial_adapter_is_the_identity():
    torch.manual_seed(0)
    adapter = SpatialAdapter(WIDTH, BOTTLENECK)
    tokens = _tokens(clips=2, frames=3)
    assert torch.equal(adapter(tokens, 3), tokens)


def test_trained_adapters_are_not_the_identity():
    tokens = _tokens(clips=1, frames=3)
    for adapter in (SpatialAdapter(WIDTH, BOTTLENECK), TemporalAdapter(WIDTH, BOTTLENECK, 0.5)):
        _randomise_up(adapter)
        assert not torch.allclose(adapter(tokens, 3), tokens)


def test_spatial_adapter_treats_each_frame_alone():
    torch.manual_seed(0)
    adapter = SpatialAdapter(WIDTH, BOTTLENECK)
    _randomise_up(adapter)
    tokens = _tokens(clips=2, frames=3)
    whole = adapter(tokens, 3)
    for row in range(tokens.shape[0]):
        alone = adapter(tokens[row : row + 1], 1)
        torch.testing.assert_close(whole[row : row + 1], alone)


def _reference_temporal(adapter: TemporalAdapter, tokens: torch.Tensor, frames: int):
    """The temporal adapter written out with loops: per clip, token position and channel, a
    zero-padded convolution over time."""
    hidden = adapter.down(tokens)
    rows, positions, width = hidden.shape
    clips = rows // frames
    half = TEMPORAL_KERNEL // 2
    weight = adapter.conv.weight[:, 0, :]  # [r, k]
    mixed = torch.zeros_like(hidden)
    for clip in range(clips):
        for t in range(frames):
            total = adapter.conv.bias.expand(positions, width).clone()
            for j in range(TEMPORAL_KERNEL):
                source = t + j - half
                if 0 <= source < frames:
                    total = total + weight[:, j] * hidden[clip * frames + source]
            mixed[clip * frames + t] = total
    return tokens + adapter.up(torch.nn.functional.gelu(mixed))


def test_temporal_adapter_matches_a_loop_reference():
    torch.manual_seed(0)
    adapter = TemporalAdapter(WIDTH, BOTTLENECK, 0.5)
    _randomise_up(adapter)
    with torch.no_grad():
        adapter.conv.bias.normal_()
    tokens = _tokens(clips=2, frames=5)
    torch.testing.assert_close(adapter(tokens, 5), _reference_temporal(adapter, tokens, 5))


def test_temporal_adapter_mixes_only_neighbouring_frames_of_the_same_clip():
    torch.manual_seed(0)
    adapter = TemporalAdapter(WIDTH, BOTTLENECK, 0.5)
    _randomise_up(adapter)
    clips, frames = 2, 6
    tokens = _tokens(clips, frames)
    changed = tokens.clone()
    changed[0 * frames + 3] += 1.0  # clip 0, frame 3
    moved = (adapter(changed, frames) - adapter(tokens, frames)).abs().flatten(1).amax(1)
    moved = moved.view(clips, frames)
    reach = TEMPORAL_KERNEL // 2
    for t in range(frames):
        if abs(t - 3) <= reach:
            assert moved[0, t] > 1e-4, t
        else:
            assert moved[0, t] < 1e-6, t
    assert moved[1].max() < 1e-6  # the other clip is untouched


def test_make_adapter_kinds():
    assert isinstance(make_adapter("S", WIDTH, BOTTLENECK, 0.5), SpatialAdapter)
    assert isinstance(make_adapter("J", WIDTH, BOTTLENECK, 0.5), SpatialAdapter)
    assert isinstance(make_adapter("T", WIDTH, BOTTLENECK, 0.5), TemporalAdapter)
    with pytest.raises(ValueError, match="'X'"):
        make_adapter("X", WIDTH, BOTTLENECK, 0.5)


@pytest.mark.parametrize(("width", "bottleneck"), [(16, 4), (32, 8), (768, 192), (7, 3)])
def test_single_adapter_counts_equal_the_closed_forms(width, bottleneck):
    assert _count(SpatialAdapter(width, bottleneck)) == spatial_parameters(width, bottleneck)
    temporal = TemporalAdapter(width, bottleneck, 0.5)
    assert _count(temporal) == temporal_parameters(width, bottleneck)


def test_uniform_placements():
    assert placement("probe", 3) == ["", "", ""]
    assert placement("spatial_all", 3) == ["S"] * 3
    assert placement("temporal_all", 3) == ["T"] * 3
    assert placement("st_adapter", 2) == ["TT", "TT"]
    assert placement("aim", 2) == ["STJ", "STJ"]


@pytest.mark.parametrize("layers", [2, 3, 6])
def test_strap_placements_split_at_the_boundary(layers):
    for b in range(layers + 1):
        plan = placement("strap", layers, b)
        assert plan == ["S"] * b + ["T"] * (layers - b)
        assert placement("strap_reversed", layers, b) == ["T"] * b + ["S"] * (layers - b)
    assert placement("strap", layers, 0) == placement("temporal_all", layers)
    assert placement("strap", layers, layers) == placement("spatial_all", layers)


@pytest.mark.parametrize("row", ["strap", "strap_reversed"])
@pytest.mark.parametrize("boundary", [None, -1, 4])
def test_strap_placement_needs_a_boundary_in_range(row, boundary):
    with pytest.raises(ValueError, match=rf"row {row}: boundary must be in \[0, 3\]"):
        placement(row, 3, boundary)


def test_unknown_row_is_refused():
    with pytest.raises(ValueError, match="unknown row 'oracle_b'"):
        placement("oracle_b", 3)


def test_every_row_has_a_placement():
    for row in ROWS:
        assert len(placement(row, 4, 2)) == 4


def test_placement_parameters_sum_the_adapters():
    s, t = spatial_parameters(WIDTH, BOTTLENECK), temporal_parameters(WIDTH, BOTTLENECK)
    assert placement_parameters(["", ""], WIDTH, BOTTLENECK) == 0
    assert placement_parameters(["S", "T", "T"], WIDTH, BOTTLENECK) == s + 2 * t
    assert placement_parameters(["TT", "STJ"], WIDTH, BOTTLENECK) == 3 * t + 2 * s
