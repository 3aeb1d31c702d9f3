"""ntm's sample-quality metrics: sliced Wasserstein-2, RBF MMD², and mode and support shares.

All are deterministic and computed in float64 whatever the input dtype; samples are rows
(images are flattened), and each metric returns a Python float.

- `sliced_wasserstein` is SWD₂ = sqrt(mean over the directions θ of a fixed bank of
  W₂²(θ·x, θ·y)), where W₂ between two equal-size 1-D sample sets matches their sorted values.
  The bank (`projection_bank`) is random unit directions from a fixed seed, the same for every
  method and run, so differences between methods are not projection noise. A translation by s
  gives exactly sqrt(mean (θ·s)²), which is |s| in 1-D.
- `mmd_rbf` is the *unbiased* estimate of MMD² (the U-statistic: the self-similarity terms
  leave out i = j), so it is centred on 0 for two samples of one distribution and can be
  slightly negative. The kernel is a sum of RBFs, k(a, b) = Σ_σ exp(−‖a − b‖²/(2σ²)). Kernel
  sums are taken over blocks of `chunk`×`chunk` pairs, so 10k×10k never builds the full matrix,
  and accumulate in float64.
- `mode_shares` assigns each sample to its nearest mode when it lies within `radius` of it;
  `mode_coverage` is the fraction of modes holding at least `min_share` of all samples (the
  design card's "modes with ≥ 2 % of samples" for 8gauss), and `near_mode_share` the fraction
  of samples near some mode. `support_share` is the fraction of samples inside the black
  squares of the checkerboard (`data.checker_support`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reprolab.studies.ntm.data import checker_support


def _rows(x: torch.Tensor, name: str) -> torch.Tensor:
    """x as float64 rows [n, features]; ValueError for an empty set."""
    if x.ndim < 1 or len(x) == 0:
        raise ValueError(f"{name} must hold at least one sample, got shape {list(x.shape)}")
    return x.reshape(len(x), -1).to(torch.float64)


def projection_bank(dim: int, count: int = 256, seed: int = 0) -> torch.Tensor:
    """`count` unit directions [count, dim] (float64), Gaussian draws normalised, from `seed`."""
    if dim < 1 or count < 1:
        raise ValueError(f"dim and count must be >= 1, got dim={dim}, count={count}")
    generator = torch.Generator().manual_seed(seed)
    directions = torch.randn((count, dim), generator=generator, dtype=torch.float64)
    return directions / directions.norm(dim=1, keepdim=True)


def sliced_wasserstein(x: torch.Tensor, y: torch.Tensor, projections: torch.Tensor) -> float:
    """SWD₂ between the equal-size sample sets x and y over the unit directions `projections`
    [count, features] (see module)."""
    a, b = _rows(x, "x"), _rows(y, "y")
    if a.shape != b.shape:
        raise ValueError(f"x and y must have the same shape, got {list(a.shape)}, {list(b.shape)}")
    if projections.ndim != 2 or projections.shape[1] != a.shape[1]:
        raise ValueError(
            f"projections must be [count, {a.shape[1]}], got {list(projections.shape)}"
        )
    bank = projections.to(torch.float64).T
    sorted_a = (a @ bank).sort(dim=0).values
    sorted_b = (b @ bank).sort(dim=0).values
    return (sorted_a - sorted_b).square().mean().sqrt().item()


def _kernel_sum(
    a: torch.Tensor, b: torch.Tensor | None, bandwidths: Sequence[float], chunk: int
) -> float:
    """Σ_{i, j} Σ_σ exp(−‖a_i − b_j‖²/(2σ²)), block by block (float64). With b None it is a's
    sum with itself, taken over the blocks on and above the diagonal (symmetry)."""
    scales = [-0.5 / float(sigma) ** 2 for sigma in bandwidths]
    other = a if b is None else b
    total = torch.zeros((), dtype=torch.float64)
    for start in range(0, len(a), chunk):
        rows = a[start : start + chunk]
        rows_sq = rows.square().sum(1, keepdim=True)
        for col in range(start if b is None else 0, len(other), chunk):
            cols = other[col : col + chunk]
            dist = (rows_sq + cols.square().sum(1) - 2 * rows @ cols.T).clamp_min(0)
            weight = 2.0 if b is None and col != start else 1.0
            for scale in scales:
                total += weight * (scale * dist).exp().sum()
    return total.item()


def mmd_rbf(
    x: torch.Tensor, y: torch.Tensor, bandwidths: Sequence[float], chunk: int = 1024
) -> float:
    """The unbiased MMD² between x [m, …] and y [n, …] (m, n ≥ 2) with the kernel
    Σ_σ exp(−‖a − b‖²/(2σ²)) over `bandwidths`, in blocks of `chunk` rows (see module)."""
    a, b = _rows(x, "x"), _rows(y, "y")
    if len(a) < 2 or len(b) < 2 or a.shape[1] != b.shape[1]:
        raise ValueError(
            f"x and y need >= 2 samples each with equal features, got {list(a.shape)}, "
            f"{list(b.shape)}"
        )
    if not bandwidths or any(not sigma > 0 for sigma in bandwidths):
        raise ValueError(f"bandwidths must be one or more positive numbers, got {bandwidths}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    m, n, diagonal = len(a), len(b), len(bandwidths)  # k(a, a) = one per bandwidth
    within_x = (_kernel_sum(a, None, bandwidths, chunk) - m * diagonal) / (m * (m - 1))
    within_y = (_kernel_sum(b, None, bandwidths, chunk) - n * diagonal) / (n * (n - 1))
    across = _kernel_sum(a, b, bandwidths, chunk) / (m * n)
    return within_x + within_y - 2 * across


def mode_shares(x: torch.Tensor, modes: torch.Tensor, radius: float) -> torch.Tensor:
    """Per mode, the share of all samples of x [n, d] whose nearest mode (of `modes` [M, d]) it
    is and which lie within `radius` of it (float64 [M]; sums to ≤ 1)."""
    points, centres = _rows(x, "x"), _rows(modes, "modes")
    if points.shape[1] != centres.shape[1]:
        raise ValueError(f"x and modes differ in features: {points.shape[1]}, {centres.shape[1]}")
    dist = torch.cdist(points, centres, compute_mode="donot_use_mm_for_euclid_dist")
    nearest, which = dist.min(dim=1)
    counts = torch.bincount(which[nearest <= radius], minlength=len(centres))
    return counts.to(torch.float64) / len(points)


def mode_coverage(
    x: torch.Tensor, modes: torch.Tensor, radius: float, min_share: float = 0.02
) -> float:
    """The fraction of `modes` holding at least `min_share` of the samples (`mode_shares`)."""
    return (mode_shares(x, modes, radius) >= min_share).to(torch.float64).mean().item()


def near_mode_share(x: torch.Tensor, modes: torch.Tensor, radius: float) -> float:
    """The fraction of samples within `radius` of their nearest mode."""
    return mode_shares(x, modes, radius).sum().item()


def support_share(x: torch.Tensor, cells: int = 4, half_width: float = 4.0) -> float:
    """The fraction of 2-D samples inside the black squares of the checkerboard."""
    return checker_support(x, cells, half_width).to(torch.float64).mean().item()
