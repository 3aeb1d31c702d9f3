"""Training-free temporal sensitivity of each block, and the boundary rules that read it.

Temporal sensitivity (TS) of block l, measured through forward hooks on the frozen backbone
over unlabelled training clips, patch tokens only (CLS aside):

    TS_l = mean ‖z_{l,n}^{(t+1)} − z_{l,n}^{(t)}‖² / mean ‖z_{l,n}^{(t)} − z̄_l‖²

(both means over clips, frames t and token positions n): how much a token at a fixed position
changes from one frame to the next, relative to how much tokens vary at all at that block (z̄_l
the mean token). The ablation measure is
1 − linear CKA between the token matrices of consecutive frames (`cka_sensitivity`).

Boundary rules (the block where temporal adapters start):
* `segment_boundary` (STRAP's rule): normalise the curve to [0, 1], take the best split into
  two constant segments by squared error; ties go to the deeper split. A flat curve has no
  shape to split: every split ties and the rule returns the deepest, `layers − 1`.
* `threshold_boundary` (ablation): the first block whose normalised value reaches κ.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from reprolab.studies.strap.backbone import blocks

FLAT = 1e-12
"""A curve whose range is below this is flat (normalisation would divide by ~0)."""


@torch.no_grad()
def block_tokens(model: torch.nn.Module, clips: torch.Tensor) -> list[torch.Tensor]:
    """Each block's output tokens [clips, T, N, d] for `clips` [B, T, 3, H, W], by hooks."""
    outputs: list[torch.Tensor] = []

    def keep(module: torch.nn.Module, inputs: tuple, output: torch.Tensor | tuple) -> None:
        outputs.append(output[0] if isinstance(output, tuple) else output)

    hooks = [layer.register_forward_hook(keep) for layer in blocks(model)]
    try:
        model(pixel_values=clips.flatten(0, 1))
    finally:
        for hook in hooks:
            hook.remove()
    batch, frames = clips.shape[:2]
    return [tokens.reshape(batch, frames, *tokens.shape[1:]) for tokens in outputs]


def temporal_sensitivity(tokens: Sequence[torch.Tensor]) -> np.ndarray:
    """TS_l per block from `block_tokens` (patch tokens; the CLS token, first, is left out)."""
    values = []
    for layer in tokens:
        patches = layer[:, :, 1:].double()
        change = (patches[:, 1:] - patches[:, :-1]).pow(2).sum(-1).mean()
        spread = (patches - patches.mean(dim=(0, 1, 2), keepdim=True)).pow(2).sum(-1).mean()
        values.append(float(change / spread))
    return np.asarray(values)


def linear_cka(x: torch.Tensor, y: torch.Tensor) -> float:
    """Linear CKA of two [n, d] matrices (rows centred): ‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F)."""
    x = x - x.mean(0, keepdim=True)
    y = y - y.mean(0, keepdim=True)
    cross = (y.T @ x).pow(2).sum()
    return float(cross / ((x.T @ x).pow(2).sum().sqrt() * (y.T @ y).pow(2).sum().sqrt()))


def cka_sensitivity(tokens: Sequence[torch.Tensor]) -> np.ndarray:
    """1 − linear CKA between consecutive frames' patch tokens per block, averaged over
    clips and frame pairs (the ablation's measure)."""
    values = []
    for layer in tokens:
        patches = layer[:, :, 1:].double()
        frames = patches.shape[1]
        scores = [
            1.0 - linear_cka(clip[t], clip[t + 1]) for clip in patches for t in range(frames - 1)
        ]
        values.append(float(np.mean(scores)))
    return np.asarray(values)


def normalised(curve: Sequence[float]) -> np.ndarray:
    """`curve` scaled to [0, 1]; a flat curve becomes all zeros."""
    values = np.asarray(curve, dtype=float)
    span = values.max() - values.min()
    if span < FLAT:
        return np.zeros_like(values)
    return (values - values.min()) / span


def segment_boundary(curve: Sequence[float]) -> int:
    """STRAP's boundary b* in [1, L − 1]: the split into two constant segments with the least
    squared error on the normalised curve; ties go to the deeper split."""
    values = normalised(curve)
    if values.size < 2:
        raise ValueError(f"a boundary needs at least 2 blocks, got {values.size}")
    best, chosen = np.inf, 1
    for split in range(1, values.size):
        early, late = values[:split], values[split:]
        error = ((early - early.mean()) ** 2).sum() + ((late - late.mean()) ** 2).sum()
        if error <= best + FLAT:
            best, chosen = min(best, error), split
    return chosen


def threshold_boundary(curve: Sequence[float], kappa: float) -> int:
    """The ablation's boundary: the first block whose normalised value is ≥ `kappa`
    (a flat curve, all zeros, reaches no positive κ: the boundary is then L, no temporal
    adapter)."""
    values = normalised(curve)
    reached = np.flatnonzero(values >= kappa)
    return int(reached[0]) if reached.size else int(values.size)
