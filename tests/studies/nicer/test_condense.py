"""nicer's condensers: the MMD estimator against Gaussian closed forms, DP-means capacity on
planted clusters, λ calibrated to a budget, and every condenser's output on the simplex."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from reprolab.studies.nicer.condense import (
    Kernel,
    calibrate_lambda,
    condense,
    condense_slides,
    dp_means,
    median_sigma2,
    merge_and_prune,
    mmd2,
    opening_radii,
)
from reprolab.studies.nicer.rows import ADAPTIVE, CONDENSERS, MATCHING

SETTINGS = {"lloyd_iters": 5, "gmm_iters": 5, "dm_steps": 5, "dm_lr": 0.01, "min_weight": 0.005}
FIXED_K = tuple(m for m in CONDENSERS if m not in ADAPTIVE)


def gaussian_kernel_means(
    mu1: np.ndarray, v1: float, mu2: np.ndarray, v2: float, s: float
) -> tuple[float, float, float]:
    """E k(X, X'), E k(Y, Y'), E k(X, Y) for k = exp(−‖a − b‖² / (2 s)), X ~ N(mu1, v1 I),
    Y ~ N(mu2, v2 I), X' and Y' independent copies."""
    d = len(mu1)
    kxx = (s / (s + 2 * v1)) ** (d / 2)
    kyy = (s / (s + 2 * v2)) ** (d / 2)
    kxy = (s / (s + v1 + v2)) ** (d / 2) * math.exp(
        -float(((mu1 - mu2) ** 2).sum()) / (2 * (s + v1 + v2))
    )
    return kxx, kyy, kxy


def sample(n: int, mu: np.ndarray, v: float, generator: torch.Generator) -> torch.Tensor:
    noise = torch.randn(n, len(mu), generator=generator, dtype=torch.float64)
    return noise * math.sqrt(v) + torch.from_numpy(mu)


@pytest.mark.parametrize(
    ("s", "v1", "mu2", "v2", "atol"),
    [
        # Different distributions: the estimate's sampling error at n = m = 2000 had a std of
        # 0.006-0.008 over 30 seeds, so 0.03 is ~4 std (and ≤ 15 % of the value).
        (1.0, 0.5, [1.0, 0.5], 1.0, 0.03),
        (1.0, 0.5, [0.0, 0.0], 2.0, 0.03),
        # Equal distributions: MMD² = 0, the estimate is the V-statistic bias plus a degenerate
        # term with std ~3e-4 at n = 2000.
        (1.0, 0.5, [0.0, 0.0], 0.5, 0.0015),
    ],
)
def test_mmd2_matches_the_gaussian_closed_form(s, v1, mu2, v2, atol):
    n = m = 2000
    mu1, mu2 = np.zeros(2), np.array(mu2)
    generator = torch.Generator().manual_seed(0)
    x, y = sample(n, mu1, v1, generator), sample(m, mu2, v2, generator)
    estimate = float(mmd2(x, y, torch.full((m,), 1.0 / m, dtype=torch.float64), Kernel(s, (1.0,))))
    kxx, kyy, kxy = gaussian_kernel_means(mu1, v1, mu2, v2, s)
    # mmd2 averages k over all pairs including i = j (k = 1): a V-statistic, biased upwards by
    # (1 − E k(X, X')) / n + (1 − E k(Y, Y')) / m.
    expected = kxx + kyy - 2 * kxy + (1 - kxx) / n + (1 - kyy) / m
    assert estimate == pytest.approx(expected, abs=atol)


def test_mmd2_is_zero_when_the_prototypes_are_all_the_points():
    x = torch.randn(30, 5, generator=torch.Generator().manual_seed(1))
    value = mmd2(x, x, torch.full((30,), 1 / 30), Kernel(2.0))
    assert abs(float(value)) < 1e-6


def test_mmd2_gradient_matches_finite_differences():
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(10, 3, generator=generator, dtype=torch.float64)
    c = torch.randn(4, 3, generator=generator, dtype=torch.float64).requires_grad_(True)
    logits = torch.randn(4, generator=generator, dtype=torch.float64).requires_grad_(True)
    kernel = Kernel(1.5)
    assert torch.autograd.gradcheck(
        lambda c, logits: mmd2(x, c, torch.softmax(logits, 0), kernel), (c, logits)
    )


def test_mmd2_accepts_a_precomputed_self_term():
    generator = torch.Generator().manual_seed(3)
    x, c = torch.randn(12, 3, generator=generator), torch.randn(3, 3, generator=generator)
    w, kernel = torch.tensor([0.5, 0.3, 0.2]), Kernel(1.0)
    assert torch.allclose(mmd2(x, c, w, kernel, kernel(x, x).mean()), mmd2(x, c, w, kernel))


def test_kernel_is_the_mean_of_its_single_scale_kernels():
    generator = torch.Generator().manual_seed(4)
    a, b = torch.randn(5, 3, generator=generator), torch.randn(4, 3, generator=generator)
    mixed = Kernel(2.0, (0.5, 1.0, 2.0))(a, b)
    singles = [Kernel(2.0 * s, (1.0,))(a, b) for s in (0.5, 1.0, 2.0)]
    assert torch.allclose(mixed, torch.stack(singles).mean(0), atol=1e-6)
    assert torch.allclose(Kernel(2.0)(a, a).diagonal(), torch.ones(5), atol=1e-5)


def test_median_sigma2_is_half_the_median_within_slide_squared_distance():
    line = np.array([[0.0], [1.0], [3.0]], dtype=np.float32)  # squared distances 1, 4, 9
    assert median_sigma2([line]) == pytest.approx(2.0)
    wide = 2 * line  # squared distances 4, 16, 36: median 16
    assert median_sigma2([line, wide, line]) == pytest.approx(2.0)
    assert median_sigma2([line, wide]) == pytest.approx((4.0 + 16.0) / 2 / 2)
    with pytest.raises(ValueError, match="no slide has two tiles"):
        median_sigma2([np.zeros((1, 2), dtype=np.float32)])


def planted(clusters: int, n: int = 120, seed: int = 0) -> torch.Tensor:
    """n points in 2-d around `clusters` centres 10 apart or more (on a circle of radius 10),
    with a within-cluster std of 0.1."""
    angle = torch.arange(clusters) * 2 * math.pi / clusters
    centres = 10.0 * torch.stack([torch.cos(angle), torch.sin(angle)], 1)
    noise = 0.1 * torch.randn(n, 2, generator=torch.Generator().manual_seed(seed))
    return centres[torch.arange(n) % clusters] + noise


def test_dp_means_recovers_the_planted_cluster_count():
    counts = [len(dp_means(planted(k), 1.0, 10)[0]) for k in (1, 3, 6)]
    assert counts == [1, 3, 6]


def test_dp_means_centres_are_the_planted_means():
    x = planted(3)
    centres, _ = dp_means(x, 1.0, 10)
    truth = torch.stack([x[i::3].mean(0) for i in range(3)])
    distance = torch.cdist(centres, truth)
    assert torch.all(distance.min(1).values < 1e-4)


def test_dp_means_opens_more_centres_as_lambda_falls():
    x = planted(3)
    counts = [len(dp_means(x, lam, 10)[0]) for lam in (1000.0, 50.0, 0.1, 0.01)]
    assert counts[0] == 1 and counts[1] == 3
    assert all(a < b for a, b in zip(counts, counts[1:], strict=False))


def test_dp_means_opens_one_centre_per_opening_radius_above_lambda():
    x = torch.randn(40, 4, generator=torch.Generator().manual_seed(5))
    radii = opening_radii(x)
    for lam in (10.0, 3.0, 1.0):
        centres, _ = dp_means(x, lam, 0)  # no Lloyd step: every opened centre is kept
        assert len(centres) == 1 + int((radii > lam).sum())


def test_opening_radii_do_not_increase_and_stop_where_dp_means_must():
    x = torch.randn(50, 3, generator=torch.Generator().manual_seed(6))
    radii = opening_radii(x)
    assert radii.shape == (49,)  # the mean and at most n - 1 opened points
    assert opening_radii(x[:1]).shape == (0,)
    assert torch.all(radii[1:] <= radii[:-1])
    assert float(radii[0]) == pytest.approx(float(((x - x.mean(0)) ** 2).sum(1).max()), rel=1e-5)


@pytest.mark.parametrize("budget", [2, 3, 5])
def test_calibrated_lambda_makes_mean_capacity_equal_the_budget(budget):
    generator = torch.Generator().manual_seed(7)
    slides = [
        torch.randn(n, 3, generator=generator) * s for n, s in ((30, 1.0), (20, 2.0), (25, 0.5))
    ]
    radii = [opening_radii(x) for x in slides]
    lam = calibrate_lambda(radii, float(budget))
    capacity = [1 + int((r > lam).sum()) for r in radii]
    assert np.mean(capacity) == budget
    assert capacity[1] > capacity[2]  # the wider slide gets more of the budget
    openings = [len(dp_means(x, lam, 0)[0]) for x in slides]
    assert openings == capacity


def test_calibrate_lambda_rejects_a_budget_below_one_and_opens_everything_above_n():
    radii = [opening_radii(torch.randn(5, 2, generator=torch.Generator().manual_seed(8)))]
    with pytest.raises(ValueError, match="budget"):
        calibrate_lambda(radii, 0.5)
    assert calibrate_lambda(radii, 100.0) == 0.0


def cohort_slide(seed: int = 0) -> np.ndarray:
    """40 tiles in 4-d from two blobs."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0, 1, (20, 4)), rng.normal(4, 0.5, (20, 4))]).astype(
        np.float32
    )


def kernel_and_lambda() -> tuple[Kernel, float]:
    """The kernel and the λ of budget 4 of a one-slide cohort (`cohort_slide()`)."""
    x = cohort_slide()
    return Kernel(median_sigma2([x])), calibrate_lambda([opening_radii(torch.from_numpy(x))], 4.0)


def condense_slide(method: str, features: np.ndarray, budget: int, seed: int = 1):
    kernel, lam = kernel_and_lambda()
    return condense(
        method, features, budget, lam, kernel, SETTINGS, torch.Generator().manual_seed(seed)
    )


@pytest.mark.parametrize("method", CONDENSERS)
@pytest.mark.parametrize(("n", "budget"), [(40, 4), (6, 8)])
def test_condensed_sets_are_weighted_prototype_sets_on_the_simplex(method, n, budget):
    features = cohort_slide()[:n]
    out = condense_slide(method, features, budget)
    k = len(out.weights)
    assert out.prototypes.shape == (k, 4) and k >= 1
    assert abs(float(out.weights.astype(np.float64).sum()) - 1.0) < 1e-5
    assert np.all(out.weights >= 0)
    assert out.assignment.shape == (n,) and out.assignment.max() < k and out.assignment.min() >= 0
    assert out.operations >= 0
    if method in FIXED_K:
        assert k == min(budget, n)


@pytest.mark.parametrize("method", CONDENSERS)
def test_condensers_are_deterministic_per_generator_seed(method):
    features = cohort_slide()
    a, b = condense_slide(method, features, 4), condense_slide(method, features, 4)
    for field in ("prototypes", "weights", "assignment"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.operations == b.operations


def test_random_draws_differ_between_seeds():
    features = cohort_slide()
    a, b = condense_slide("random", features, 4, seed=1), condense_slide("random", features, 4, 2)
    assert not np.array_equal(a.prototypes, b.prototypes)


def test_adaptive_condensers_give_the_wider_slide_more_prototypes():
    rng = np.random.default_rng(9)
    narrow = rng.normal(0, 0.2, (40, 4)).astype(np.float32)
    blobs = cohort_slide()
    sizes = {
        method: [len(condense_slide(method, x, 4).weights) for x in (narrow, blobs)]
        for method in ADAPTIVE
    }
    for method, (small, large) in sizes.items():
        assert small < large, method


@pytest.mark.parametrize("method", MATCHING)
def test_batched_matching_follows_each_slides_own_trajectory(method):
    # Slides of different sizes, so the batch is padded; enough steps to move the prototypes.
    slides = [cohort_slide(seed)[:n] for seed, n in ((0, 40), (1, 25), (2, 12))]
    kernel, lam = kernel_and_lambda()
    settings = {**SETTINGS, "dm_steps": 10, "dm_lr": 0.05}
    batched = condense_slides(
        method, slides, 4, lam, kernel, settings, torch.Generator().manual_seed(3)
    )
    generator = torch.Generator().manual_seed(3)  # drawn from in slide order, as in the batch
    alone = [condense(method, x, 4, lam, kernel, settings, generator) for x in slides]
    for together, single in zip(batched, alone, strict=True):
        np.testing.assert_allclose(together.prototypes, single.prototypes, atol=1e-5)
        np.testing.assert_allclose(together.weights, single.weights, atol=1e-5)
        assert together.operations == single.operations


def test_matching_lowers_the_mmd_of_the_kmeans_start():
    x = cohort_slide()
    kernel, lam = kernel_and_lambda()
    settings = {**SETTINGS, "dm_steps": 15, "dm_lr": 0.05}

    def distance(method: str) -> float:
        out = condense(method, x, 3, lam, kernel, settings, torch.Generator().manual_seed(4))
        c, w = torch.from_numpy(out.prototypes), torch.from_numpy(out.weights)
        return float(mmd2(torch.from_numpy(x), c, w, kernel))

    assert distance("kmeans_dm") < distance("kmeans")


def test_unknown_condenser_is_rejected():
    with pytest.raises(ValueError, match="unknown condenser"):
        condense_slide("coreset", cohort_slide(), 4)


def test_merge_and_prune_merges_coincident_prototypes_and_keeps_the_simplex():
    c = torch.tensor([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0], [9.0, 9.0]])
    w = torch.tensor([0.3, 0.2, 0.498, 0.002])
    merged, weights = merge_and_prune(c, w, radius2=0.1, min_weight=0.005)
    assert merged.tolist() == [[5.0, 5.0], [0.0, 0.0]]  # heaviest first; the light one pruned
    assert torch.allclose(weights, torch.tensor([0.498, 0.5]) / 0.998)
    assert float(weights.sum()) == pytest.approx(1.0, abs=1e-6)


def test_merge_and_prune_keeps_distinct_prototypes_and_never_empties_the_set():
    c, w = torch.tensor([[0.0], [3.0], [6.0]]), torch.tensor([0.5, 0.3, 0.2])
    kept, weights = merge_and_prune(c, w, radius2=1.0, min_weight=0.0)
    assert kept.tolist() == [[0.0], [3.0], [6.0]] and torch.allclose(weights, w)
    kept, weights = merge_and_prune(c, w, radius2=1.0, min_weight=0.9)
    assert kept.tolist() == [[0.0]] and weights.tolist() == [1.0]


def test_a_zero_matching_step_size_leaves_the_kmeans_start_exactly():
    slides = [np.random.default_rng(i).normal(size=(30, 4)).astype(np.float32) for i in range(3)]
    off = {"lloyd_iters": 5, "gmm_iters": 5, "dm_steps": 5, "dm_lr": 0.0, "min_weight": 0.005}
    plain = condense_slides(
        "kmeans", slides, 3, 1.0, Kernel(1.0), off, torch.Generator().manual_seed(2)
    )
    matched = condense_slides(
        "kmeans_dm", slides, 3, 1.0, Kernel(1.0), off, torch.Generator().manual_seed(2)
    )
    for a, b in zip(plain, matched, strict=True):
        assert np.array_equal(a.prototypes, b.prototypes) and np.array_equal(a.weights, b.weights)
