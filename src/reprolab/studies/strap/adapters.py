"""Adapters injected into a frozen image transformer, and the placements the table compares.

Two adapter kinds, both bottlenecks of width `r` added residually to a block's output tokens
(a forward hook on the block, so any `transformers` vision model works without editing it):

* `SpatialAdapter` (AIM's): x + W_up GELU(W_down LN(x)), per token and per frame; it never
  mixes frames, so a model with spatial adapters only treats each frame alone.
* `TemporalAdapter` (ST-Adapter's): x + W_up GELU(DWConv_t(W_down x)), the depthwise
  convolution running over time (kernel `TEMPORAL_KERNEL`, zero padding) for each token
  position and channel: the operator that lets a frame see its neighbours.

Initialisation: W_up is zero, so every adapter starts as the identity and the adapted model
starts as the frozen backbone. The temporal convolution's weights are drawn from
N(0, `conv_std`), not zero as in the released ST-Adapter code: with both W_up and the
convolution at zero, no gradient reaches either (the study page gives the prototype's numbers).

A *placement* is one string per block, read left to right as the adapters applied after it:
"" none, "S" spatial, "T" temporal, "TT" two temporal (ST-Adapter's two per block), "STJ"
AIM's spatial, temporal and joint adapters (the joint one is a spatial-kind bottleneck; see the
study page). `placement(row, layers, b)` builds each row of the table (`workflow_io.ROWS`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from reprolab.studies.strap.workflow_io import ROWS

TEMPORAL_KERNEL = 3
KINDS = {"S": "spatial", "T": "temporal", "J": "spatial"}


class SpatialAdapter(nn.Module):
    """x + W_up GELU(W_down LN(x)) on each token of each frame (no temporal mixing)."""

    def __init__(self, width: int, bottleneck: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.down = nn.Linear(width, bottleneck)
        self.up = nn.Linear(bottleneck, width)
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, tokens: torch.Tensor, frames: int) -> torch.Tensor:
        """`tokens` [clips * frames, N, d]; `frames` is unused (kept for one adapter call)."""
        return tokens + self.up(F.gelu(self.down(self.norm(tokens))))


class TemporalAdapter(nn.Module):
    """x + W_up GELU(DWConv_t(W_down x)): a depthwise convolution over time per token."""

    def __init__(self, width: int, bottleneck: int, conv_std: float) -> None:
        super().__init__()
        self.down = nn.Linear(width, bottleneck)
        self.conv = nn.Conv1d(
            bottleneck,
            bottleneck,
            TEMPORAL_KERNEL,
            padding=TEMPORAL_KERNEL // 2,
            groups=bottleneck,
        )
        self.up = nn.Linear(bottleneck, width)
        nn.init.normal_(self.conv.weight, std=conv_std)
        nn.init.zeros_(self.conv.bias)
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, tokens: torch.Tensor, frames: int) -> torch.Tensor:
        """`tokens` [clips * frames, N, d] with each clip's frames consecutive."""
        rows, positions, _ = tokens.shape
        clips = rows // frames
        hidden = self.down(tokens)
        width = hidden.shape[-1]
        # [clips, T, N, r] -> [clips * N, r, T]: convolve each token position over time
        series = hidden.view(clips, frames, positions, width).permute(0, 2, 3, 1)
        mixed = self.conv(series.reshape(clips * positions, width, frames))
        mixed = mixed.view(clips, positions, width, frames).permute(0, 3, 1, 2)
        return tokens + self.up(F.gelu(mixed.reshape(rows, positions, width)))


def make_adapter(kind: str, width: int, bottleneck: int, conv_std: float) -> nn.Module:
    """The adapter a placement letter names (S, T or J)."""
    if KINDS.get(kind) == "spatial":
        return SpatialAdapter(width, bottleneck)
    if kind == "T":
        return TemporalAdapter(width, bottleneck, conv_std)
    raise ValueError(f"adapter kind {kind!r}: expected one of {sorted(KINDS)}")


def placement(row: str, layers: int, boundary: int | None = None) -> list[str]:
    """The adapters after each of `layers` blocks for table row `row`.

    `strap` puts spatial adapters on blocks < `boundary` and temporal ones from it on;
    `strap_reversed` swaps the two. The other rows are uniform over the blocks.
    """
    uniform = {
        "probe": "",
        "spatial_all": "S",
        "temporal_all": "T",
        "st_adapter": "TT",
        "aim": "STJ",
    }
    if row in uniform:
        return [uniform[row]] * layers
    if row in ("strap", "strap_reversed"):
        if boundary is None or not 0 <= boundary <= layers:
            raise ValueError(f"row {row}: boundary must be in [0, {layers}], got {boundary}")
        early, late = ("S", "T") if row == "strap" else ("T", "S")
        return [early if block < boundary else late for block in range(layers)]
    raise ValueError(f"unknown row {row!r}: expected one of {list(ROWS)}")


def spatial_parameters(width: int, bottleneck: int) -> int:
    """Closed form of a SpatialAdapter's parameters: LN (2d), W_down (dr + r), W_up (rd + d)."""
    return 2 * width * bottleneck + 3 * width + bottleneck


def temporal_parameters(width: int, bottleneck: int) -> int:
    """Closed form of a TemporalAdapter's parameters: W_down (dr + r), the depthwise
    convolution (kr + r) and W_up (rd + d)."""
    return 2 * width * bottleneck + width + (TEMPORAL_KERNEL + 2) * bottleneck


def placement_parameters(plan: Sequence[str], width: int, bottleneck: int) -> int:
    """Closed form of the trainable adapter parameters of a placement (the head aside)."""
    sizes = {
        "spatial": spatial_parameters(width, bottleneck),
        "temporal": temporal_parameters(width, bottleneck),
    }
    return sum(sizes[KINDS[kind]] for adapters in plan for kind in adapters)
