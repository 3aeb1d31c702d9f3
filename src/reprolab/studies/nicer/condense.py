"""Condensers: one slide's tile features → a weighted prototype set.

A condensed slide is K prototypes (K, d) with weights on the simplex (Σ w = 1). Every condenser
runs in float32 torch on the features it is given (standardised by the caller) and draws its
randomness from the `torch.Generator` it is handed, so a seed gives the same set:

* ``random``: K tiles drawn without replacement, uniform weights.
* ``kmeans``: Lloyd's k-means from k-means++ seeds, K fixed; weights = cluster shares.
* ``gmm`` (PANTHER-lite, the prototype-learning baseline): a diagonal Gaussian mixture fitted by
  EM from the k-means solution; prototypes = means, weights = mixing proportions.
* ``herding``: kernel herding (Chen et al. 2010) picks K tiles greedily to match the slide's
  kernel mean; uniform weights.
* ``kmeans_dm``: k-means, then distribution matching (`refine`) at fixed K.
* ``dpmeans``: DP-means capacity (`dp_means`): K grows with the slide's spread, no matching.
* ``nicer``: DP-means capacity, then distribution matching, merge and prune.

DP-means' small-variance limit of a Dirichlet-process mixture opens a new centre wherever a
point lies farther than λ (squared distance) from every centre. We open them farthest point
first (so the result does not depend on tile order), then run Lloyd steps at that K. The
opening radii of that traversal do not increase, so K_s(λ) = 1 + #{radii > λ}: `calibrate_lambda`
sets λ from the pooled radii of a cohort so that the mean number of opened centres over its
slides equals a budget, which is how NICER is held to the same *average* budget as the
fixed-K condensers. Lloyd steps drop a centre that loses every point (often the first, the
slide's mean, on a slide of separated types), and merge and prune drop more, so the realised
mean is at most the budget; the table reports it.

Distribution matching minimises the squared MMD between the slide's tiles and Σ_k w_k δ_{c_k}
under a mixture of RBF kernels (`Kernel`), by Adam over the prototypes and the logits of the
weights (a step size or step count of 0 switches matching off, so a tuner can find that it
does not help). Prototypes then closer than √λ/2 are merged (weights summed) and those under
`min_weight` pruned (weights renormalised). `operations` counts the pairwise distance or kernel
evaluations a condenser spent: the cost measure of the table (wall times go to the logs and to
benchmarks/nicer_condensation.py, never into results).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from reprolab.studies.nicer.rows import CONDENSERS, MATCHING

KERNEL_SCALES = (0.5, 1.0, 2.0)


@dataclass(frozen=True)
class Condensed:
    """Prototypes (K, d), weights (K,) summing to one, each tile's nearest prototype (n,), and
    the distance or kernel evaluations spent."""

    prototypes: np.ndarray
    weights: np.ndarray
    assignment: np.ndarray
    operations: int


@dataclass(frozen=True)
class Kernel:
    """A mixture of RBF kernels k(a, b) = mean_s exp(−‖a − b‖² / (2 s σ²)), s in `scales`."""

    sigma2: float
    scales: tuple[float, ...] = KERNEL_SCALES

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """(..., n, d), (..., m, d) → (..., n, m) kernel matrices."""
        d2 = sq_distances(a, b)
        return torch.stack([torch.exp(-d2 / (2 * s * self.sigma2)) for s in self.scales]).mean(0)


def sq_distances(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances (..., n, m) of (..., n, d) and (..., m, d), clamped at zero."""
    return (
        (a * a).sum(-1, keepdim=True) - 2.0 * a @ b.mT + (b * b).sum(-1).unsqueeze(-2)
    ).clamp_min(0.0)


def median_sigma2(slides: Sequence[np.ndarray], max_slides: int = 32) -> float:
    """σ² of the kernel: half the median within-slide squared distance (the median heuristic),
    pooled over the first `max_slides` slides (no labels are used)."""
    medians = []
    for x in slides[:max_slides]:
        t = torch.from_numpy(x)
        d2 = sq_distances(t, t)
        upper = d2[torch.triu_indices(len(t), len(t), 1).unbind()]
        if upper.numel():
            medians.append(float(torch.quantile(upper.double(), 0.5)))
    if not medians:
        raise ValueError("median_sigma2: no slide has two tiles")
    return float(np.median(medians)) / 2.0


def mmd2(
    x: torch.Tensor,
    c: torch.Tensor,
    w: torch.Tensor,
    kernel: Kernel,
    self_term: torch.Tensor | None = None,
) -> torch.Tensor:
    """Squared MMD between the empirical distribution of `x` and Σ_k w_k δ_{c_k} (w sums to 1).

    `self_term`, the mean of k(x_i, x_j), may be passed in when it was computed before (it does
    not depend on the prototypes)."""
    if self_term is None:
        self_term = kernel(x, x).mean()
    return self_term - 2.0 * (kernel(x, c) @ w).mean() + w @ kernel(c, c) @ w


def _assign(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Index of each point's nearest centre."""
    return sq_distances(x, c).argmin(1)


def _shares(assignment: torch.Tensor, k: int) -> torch.Tensor:
    """Fraction of the points assigned to each of k centres."""
    return torch.bincount(assignment, minlength=k).float() / len(assignment)


def _lloyd(x: torch.Tensor, c: torch.Tensor, iters: int) -> torch.Tensor:
    """Lloyd steps from centres `c`; a centre that loses every point is dropped."""
    for _ in range(iters):
        a = _assign(x, c)
        counts = torch.bincount(a, minlength=len(c))
        sums = torch.zeros_like(c).index_add_(0, a, x)
        keep = counts > 0
        new = sums[keep] / counts[keep, None].float()
        if len(new) == len(c) and torch.equal(new, c):
            break
        c = new
    return c


def kmeans(x: torch.Tensor, k: int, generator: torch.Generator, iters: int) -> torch.Tensor:
    """Centres of Lloyd's k-means from k-means++ seeding (k ≤ n)."""
    k = min(k, len(x))
    first = int(torch.randint(len(x), (1,), generator=generator))
    centres = [x[first]]
    nearest = sq_distances(x, x[first : first + 1])[:, 0]
    for _ in range(1, k):
        p = nearest / nearest.sum() if nearest.sum() > 0 else torch.full_like(nearest, 1 / len(x))
        pick = int(torch.multinomial(p, 1, generator=generator))
        centres.append(x[pick])
        nearest = torch.minimum(nearest, sq_distances(x, x[pick : pick + 1])[:, 0])
    return _lloyd(x, torch.stack(centres), iters)


def opening_radii(x: torch.Tensor) -> torch.Tensor:
    """DP-means' farthest-first traversal, starting from the slide's mean: for each point in
    the order it would be opened, its squared distance to the nearest centre opened before it
    (non-increasing). `dp_means` opens at most n − 1 points beside the mean, so n − 1 values."""
    nearest = sq_distances(x, x.mean(0, keepdim=True))[:, 0]
    radii = []
    for _ in range(len(x) - 1):
        pick = int(nearest.argmax())
        radii.append(nearest[pick])
        nearest = torch.minimum(nearest, sq_distances(x, x[pick : pick + 1])[:, 0])
    return torch.stack(radii) if radii else x.new_zeros(0)


def calibrate_lambda(radii: Sequence[torch.Tensor], budget: float) -> float:
    """λ at which DP-means opens, on average over the slides, `budget` − 1 centres beyond the
    mean: the (N·(budget − 1))-th largest pooled opening radius (N slides)."""
    if budget < 1:
        raise ValueError(f"calibrate_lambda: budget={budget!r}, expected >= 1")
    pooled = torch.sort(torch.cat(list(radii)), descending=True).values
    opened = round(len(radii) * (budget - 1))
    if opened >= len(pooled):
        return 0.0
    return float(pooled[opened])


def dp_means(x: torch.Tensor, lam: float, iters: int) -> tuple[torch.Tensor, int]:
    """DP-means centres at threshold `lam` (farthest-first openings, then Lloyd) and the
    distance evaluations spent."""
    centres = [x.mean(0)]
    nearest = sq_distances(x, centres[0][None])[:, 0]
    while len(centres) < len(x) and float(nearest.max()) > lam:
        pick = int(nearest.argmax())
        centres.append(x[pick])
        nearest = torch.minimum(nearest, sq_distances(x, x[pick : pick + 1])[:, 0])
    c = _lloyd(x, torch.stack(centres), iters)
    return c, len(x) * len(centres) * (1 + iters)


def gmm(x: torch.Tensor, c: torch.Tensor, iters: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Means and mixing proportions of a diagonal Gaussian mixture, EM from centres `c`."""
    a = _assign(x, c)
    weights = _shares(a, len(c)).clamp_min(1e-6)
    weights = weights / weights.sum()
    floor = 1e-3 * x.var(0).mean()
    var = torch.ones_like(c) * x.var(0).mean()
    for _ in range(iters):
        log_p = (
            -0.5 * (((x[:, None, :] - c[None]) ** 2) / var[None] + torch.log(var[None])).sum(-1)
            + torch.log(weights)[None]
        )
        resp = torch.softmax(log_p, dim=1)
        mass = resp.sum(0) + 1e-9
        c = (resp.T @ x) / mass[:, None]
        var = ((resp.T @ (x * x)) / mass[:, None] - c * c).clamp_min(floor)
        weights = mass / mass.sum()
    return c, weights


def herding(x: torch.Tensor, k: int, kernel: Kernel) -> torch.Tensor:
    """Indices of `k` tiles chosen by kernel herding (each tile at most once)."""
    gram = kernel(x, x)
    target = gram.mean(1)
    chosen: list[int] = []
    running = torch.zeros(len(x))
    for t in range(min(k, len(x))):
        score = target - running / (t + 1)
        if chosen:
            score[chosen] = -torch.inf
        pick = int(score.argmax())
        chosen.append(pick)
        running += gram[:, pick]
    return torch.tensor(chosen)


def _padded(tensors: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack (n_s, ...) tensors into (S, n_max, ...) with zeros, and the (S, n_max) mask."""
    size = max(len(t) for t in tensors)
    out = tensors[0].new_zeros((len(tensors), size, *tensors[0].shape[1:]))
    mask = torch.zeros(len(tensors), size, dtype=torch.bool)
    for index, t in enumerate(tensors):
        out[index, : len(t)] = t
        mask[index, : len(t)] = True
    return out, mask


def refine(
    xs: Sequence[torch.Tensor],
    cs: Sequence[torch.Tensor],
    ws: Sequence[torch.Tensor],
    kernel: Kernel,
    steps: int,
    lr: float,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Distribution matching of every slide at once: Adam on the prototypes and weight logits
    against the sum over slides of their MMD². The slides are padded into one batch; each
    slide's terms depend on its own parameters only and Adam updates each coordinate from its
    own gradient, so a slide follows the trajectory it would follow alone."""
    x, x_mask = _padded(list(xs))
    c, c_mask = _padded(list(cs))
    w, _ = _padded(list(ws))
    counts = x_mask.sum(1).float()
    pair = (x_mask[:, :, None] & x_mask[:, None, :]).float()
    self_term = (kernel(x, x) * pair).sum((1, 2)) / counts**2
    centres = c.clone().requires_grad_(True)
    logits = torch.log(w.clamp_min(1e-6)).clone().requires_grad_(True)
    optimiser = torch.optim.Adam([centres, logits], lr=lr)
    for _ in range(steps):
        optimiser.zero_grad()
        weights = torch.softmax(logits.masked_fill(~c_mask, -torch.inf), dim=1)
        cross = (kernel(x, centres) * x_mask[:, :, None].float() * weights[:, None, :]).sum(
            (1, 2)
        ) / counts
        within = (weights[:, None, :] @ kernel(centres, centres) @ weights[:, :, None]).flatten()
        (self_term - 2.0 * cross + within).sum().backward()
        optimiser.step()
    weights = torch.softmax(logits.detach().masked_fill(~c_mask, -torch.inf), dim=1)
    return [(centres.detach()[i, : len(t)], weights[i, : len(t)]) for i, t in enumerate(cs)]


def merge_and_prune(
    c: torch.Tensor, w: torch.Tensor, radius2: float, min_weight: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge prototypes within squared distance `radius2` of a heavier one (weights summed,
    the heavier one's position kept), drop those under `min_weight`, renormalise."""
    order = torch.argsort(w, descending=True, stable=True)
    c, w = c[order], w[order].clone()
    alive = torch.ones(len(c), dtype=torch.bool)
    d2 = sq_distances(c, c)
    for i in range(len(c)):
        if not alive[i]:
            continue
        close = alive & (d2[i] < radius2)
        close[: i + 1] = False
        w[i] += w[close].sum()
        alive &= ~close
    keep = alive & (w >= min_weight)
    if not keep.any():
        keep[0] = True
    return c[keep], w[keep] / w[keep].sum()


def _start(
    method: str,
    x: torch.Tensor,
    budget: int,
    lam: float,
    kernel: Kernel,
    settings: Mapping[str, Any],
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """A slide's prototypes, weights and evaluations before any distribution matching."""
    n, k = len(x), min(budget, len(x))
    iters = int(settings["lloyd_iters"])
    if method == "random":
        pick = torch.randperm(n, generator=generator)[:k]
        return x[pick], torch.full((k,), 1.0 / k), 0
    if method == "herding":
        return x[herding(x, k, kernel)], torch.full((k,), 1.0 / k), n * n * len(kernel.scales)
    if method in ("kmeans", "gmm", "kmeans_dm"):
        c = kmeans(x, k, generator, iters)
        w, ops = _shares(_assign(x, c), len(c)), n * k * (k + iters)
        if method == "gmm":
            c, w = gmm(x, c, int(settings["gmm_iters"]))
            ops += n * len(c) * int(settings["gmm_iters"])
        return c, w, ops
    c, ops = dp_means(x, lam, iters)
    return c, _shares(_assign(x, c), len(c)), ops


def condense_slides(
    method: str,
    slides: Sequence[np.ndarray],
    budget: int,
    lam: float,
    kernel: Kernel,
    settings: Mapping[str, Any],
    generator: torch.Generator,
) -> list[Condensed]:
    """Condense each slide's standardised features with `method` (see the module docstring).

    `budget` is K of the fixed-K condensers; `lam` is the adaptive condensers' DP-means
    threshold (from `calibrate_lambda` at the same budget). `settings`: lloyd_iters, gmm_iters,
    dm_steps, dm_lr, min_weight. The slides draw from `generator` in order; the matching rows
    refine all slides in one batch (`refine`).
    """
    if method not in CONDENSERS:
        raise ValueError(f"unknown condenser {method!r}; expected one of {CONDENSERS}")
    xs = [torch.from_numpy(np.ascontiguousarray(f, dtype=np.float32)) for f in slides]
    starts = [_start(method, x, budget, lam, kernel, settings, generator) for x in xs]
    sets = [(c, w) for c, w, _ in starts]
    operations = [ops for _, _, ops in starts]
    steps, step_size = int(settings["dm_steps"]), float(settings["dm_lr"])
    if method in MATCHING and steps > 0 and step_size > 0:  # either at 0: matching is off
        centres, weights = zip(*sets, strict=True)
        sets = refine(xs, centres, weights, kernel, steps, step_size)
        for i, (x, (c, _)) in enumerate(zip(xs, sets, strict=True)):
            operations[i] += steps * (len(x) * len(c) + len(c) ** 2) * len(kernel.scales)
    if method == "nicer":
        min_weight = float(settings["min_weight"])
        sets = [merge_and_prune(c, w, lam / 4.0, min_weight) for c, w in sets]
    return [
        Condensed(
            c.numpy().astype(np.float32),
            (w / w.sum()).numpy().astype(np.float32),
            _assign(x, c).numpy().astype(np.int64),
            int(ops),
        )
        for x, (c, w), ops in zip(xs, sets, operations, strict=True)
    ]


def condense(
    method: str,
    features: np.ndarray,
    budget: int,
    lam: float,
    kernel: Kernel,
    settings: Mapping[str, Any],
    generator: torch.Generator,
) -> Condensed:
    """One slide condensed by `condense_slides`."""
    return condense_slides(method, [features], budget, lam, kernel, settings, generator)[0]
