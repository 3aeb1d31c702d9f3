"""Synthetic "CLIP-like" text embeddings and 2-D feature maps, unit vectors in R^D.

Text: t_c = normalise(m + spread·u_c) with a shared direction m and u_c ~ N(0, I/D), so classes
share a common component as CLIP's text embeddings do (inter-class cosine ≈ 1/(1 + spread²)).

A view's feature map is built from its ground-truth label map, with the three defects that make
lifting hard in practice:
- *low resolution*: prototypes t_c + gap·g (g a unit modality-gap direction, one per scene) are
  averaged over a `patch_grid` × `patch_grid` grid of patches, a noise vector of `noise`/√D per
  dimension is added per patch, and the patch features are bilinearly upsampled to the image,
  which mixes classes at object boundaries and occlusion edges;
- *view-dependent noise*: each view's noise level is drawn from `noise` (a range);
- *hallucinations*: `hallucinations` disks of radius `hallucination_radius` px per view are
  overwritten by the prototype of a wrong class (one class per disk, not the label at its
  centre), independently per view, so they are inconsistent across views.
Background pixels (no Gaussian) carry a background prototype that is no class's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from reprolab.studies.normlift.lifting import normalise


def text_embeddings(
    n_classes: int, dim: int, spread: float, rng: np.random.Generator
) -> np.ndarray:
    """[C, D] unit text embeddings with a shared component (module docstring)."""
    shared = normalise(rng.normal(size=dim))
    return normalise(shared + spread * rng.normal(size=(n_classes, dim)) / np.sqrt(dim))


def prototypes(text: np.ndarray, gap: float, rng: np.random.Generator) -> np.ndarray:
    """[C + 1, D] image-side prototypes: each class's text embedding shifted along one random
    modality-gap direction by `gap`, and a last row for the background (a random direction)."""
    dim = text.shape[1]
    direction = normalise(rng.normal(size=dim))
    background = normalise(rng.normal(size=dim))
    return np.vstack([text + gap * direction, background])


def _upsample(patches: np.ndarray, size: int) -> np.ndarray:
    """Bilinear upsampling of [h, w, D] patch features to [size, size, D] (half-pixel
    centres, as image resizing does)."""
    grid = torch.as_tensor(patches).permute(2, 0, 1)[None]
    up = torch.nn.functional.interpolate(
        grid, size=(size, size), mode="bilinear", align_corners=False
    )
    return up[0].permute(1, 2, 0).numpy()


def _disk(size: int, centre: np.ndarray, radius: float) -> np.ndarray:
    rows, cols = np.mgrid[:size, :size]
    return (rows + 0.5 - centre[0]) ** 2 + (cols + 0.5 - centre[1]) ** 2 <= radius**2


def feature_map(
    labels: np.ndarray,
    protos: np.ndarray,
    spec: Mapping[str, Any],
    rng: np.random.Generator,
) -> np.ndarray:
    """[H, W, D] unit features of a view whose ground-truth label map is `labels` [H, W]
    (−1 = background); `spec` is params `features` (module docstring)."""
    size = labels.shape[0]
    n_classes, dim = protos.shape[0] - 1, protos.shape[1]
    pixel = protos[np.where(labels < 0, n_classes, labels)]
    grid = int(spec["patch_grid"])
    step = size // grid
    patches = pixel.reshape(grid, step, grid, step, dim).mean(axis=(1, 3))
    noise = rng.uniform(*spec["noise"])
    patches = patches + noise * rng.normal(size=patches.shape) / np.sqrt(dim)
    features = _upsample(patches, size)
    for _ in range(int(spec["hallucinations"])):
        centre = rng.uniform(0, size, size=2)
        truth = labels[int(centre[0]), int(centre[1])]
        wrong = rng.choice([c for c in range(n_classes) if c != truth])
        disk = _disk(size, centre, float(spec["hallucination_radius"]))
        features[disk] = protos[wrong] + noise * rng.normal(size=(int(disk.sum()), dim)) / np.sqrt(
            dim
        )
    return normalise(features)
