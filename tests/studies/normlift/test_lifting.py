"""Lifting methods of normlift against brute-force loops, constructed cases and the identities
of the method (closed form, r² = intra + inter, Kish support, copy-only mode voting)."""

import numpy as np
import pytest
import torch

from reprolab.studies.normlift import lifting
from reprolab.studies.normlift.lifting import (
    Weights,
    back_project,
    calibrated,
    calibrated_ablation,
    decomposition,
    distill,
    effective_support,
    knn_average,
    max_weight,
    mode_vote,
    nearest_neighbours,
    normalise,
    query_labels,
    reliability,
    render_labels,
    weighted_average,
)


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def unit_rows(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def random_problem(seed: int, G: int = 30, V: int = 5, P: int = 40, D: int = 8):
    """Random sparse weights: Gaussian 0 is unobserved, Gaussian 1 is seen by view 2 only."""
    rng = np.random.default_rng(seed)
    mask = rng.random((G, V, P)) < 0.2
    mask[0] = False
    mask[1] = False
    mask[1, 2, :5] = True
    g, v, p = np.nonzero(mask)
    order = rng.permutation(len(g))  # entries in no particular order
    weights = Weights(
        g=g[order],
        v=v[order],
        p=p[order],
        w=rng.uniform(0.05, 1.0, len(g)),
        n_gaussians=G,
        n_views=V,
        n_pixels=P,
    )
    return weights, unit_rows(rng, V, P, D)


def brute_force_sums(weights: Weights, features: np.ndarray):
    G, V, D = weights.n_gaussians, weights.n_views, features.shape[2]
    b = np.zeros((G, D))
    total = np.zeros(G)
    view_sum = np.zeros((G, V, D))
    view_weight = np.zeros((G, V))
    for g, v, p, w in zip(weights.g, weights.v, weights.p, weights.w, strict=True):
        b[g] += w * features[v, p]
        total[g] += w
        view_sum[g, v] += w * features[v, p]
        view_weight[g, v] += w
    return b, total, view_sum, view_weight


def test_weights_reject_repeats_bad_ranges_and_nonpositive_weights():
    good = dict(g=[0, 1], v=[0, 0], p=[0, 0], w=[0.5, 0.5], n_gaussians=2, n_views=1, n_pixels=1)
    assert Weights(**good).nnz == 2
    with pytest.raises(ValueError, match="repeated"):
        Weights(**{**good, "g": [0, 0]})
    with pytest.raises(ValueError, match=r"Weights\.p must lie in \[0, 1\)"):
        Weights(**{**good, "p": [0, 1]})
    with pytest.raises(ValueError, match="Weights.w"):
        Weights(**{**good, "w": [0.5, 0.0]})
    with pytest.raises(ValueError, match="one length"):
        Weights(**{**good, "w": [0.5]})


def test_back_projection_matches_a_python_loop_and_is_bit_identical():
    weights, features = random_problem(0)
    b, total, view_sum, view_weight = brute_force_sums(weights, features)
    bp = back_project(weights, features)
    np.testing.assert_allclose(bp.b, b, atol=1e-12)
    np.testing.assert_allclose(bp.total, total, atol=1e-12)
    np.testing.assert_allclose(bp.view_weight, view_weight, atol=1e-12)
    seen_g, seen_v = np.nonzero(view_weight)
    np.testing.assert_array_equal(bp.pair_gaussian, seen_g)
    np.testing.assert_array_equal(bp.pair_view, seen_v)
    means = view_sum[seen_g, seen_v] / view_weight[seen_g, seen_v][:, None]
    np.testing.assert_allclose(bp.pair_mean, means, atol=1e-12)
    again = back_project(weights, features)
    assert np.array_equal(again.b, bp.b) and np.array_equal(again.pair_mean, bp.pair_mean)
    with pytest.raises(ValueError, match="features must have shape"):
        back_project(weights, features[:, :-1])


def test_closed_form_is_the_maximiser_on_the_sphere():
    weights, features = random_problem(1)
    gradient, total, _, _ = brute_force_sums(weights, features)  # ∇ Σ w⟨f, F⟩ = Σ w F
    f = unit_rows(np.random.default_rng(7), weights.n_gaussians, features.shape[2])
    for _ in range(500):
        f = normalise(f + 0.5 * gradient)
    closed = normalise(back_project(weights, features).b)
    seen = total > 0
    assert np.all(np.sum(closed[seen] * f[seen], axis=1) > 0.9999)
    assert np.all(closed[~seen] == 0.0)


@pytest.mark.parametrize("seed", [2, 3])
def test_reliability_splits_into_intra_and_inter(seed, monkeypatch):
    weights, features = random_problem(seed)
    bp = back_project(weights, features)
    r = reliability(bp)
    intra, inter = decomposition(bp)
    np.testing.assert_allclose(r**2, intra + inter, atol=1e-10)
    n_eff = effective_support(bp)
    seen = bp.total > 0
    assert np.all((r >= 0) & (r <= 1 + 1e-12))
    assert np.all(intra >= 0) and np.all(intra[seen] <= 1 / n_eff[seen] + 1e-12)
    assert r[0] == intra[0] == inter[0] == 0.0  # unobserved
    assert inter[1] == 0.0 and intra[1] == pytest.approx(r[1] ** 2, abs=1e-12)  # one view
    # inter against an explicit double loop over views
    _, total, view_sum, view_weight = brute_force_sums(weights, features)
    for g in np.nonzero(seen)[0]:
        means = view_sum[g] / np.where(view_weight[g] > 0, view_weight[g], 1)[:, None]
        omega = view_weight[g] / total[g]
        expected = sum(
            omega[a] * omega[c] * means[a] @ means[c]
            for a in range(weights.n_views)
            for c in range(weights.n_views)
            if a != c
        )
        assert inter[g] == pytest.approx(expected, abs=1e-12)
    monkeypatch.setattr(lifting, "GRAM_CHUNK_ELEMENTS", 7 * weights.n_views * features.shape[2])
    chunked = decomposition(bp)
    np.testing.assert_allclose(chunked[1], inter, atol=1e-14)


def test_effective_support_counts_views():
    weights, features = random_problem(4)
    n_eff = effective_support(back_project(weights, features))
    assert n_eff[0] == 0.0 and n_eff[1] == 1.0
    assert np.all((n_eff[2:] >= 1.0) & (n_eff[2:] <= weights.n_views + 1e-12))
    V = 4
    equal = Weights(
        g=np.zeros(2 * V, dtype=np.int64),
        v=np.repeat(np.arange(V), 2),
        p=np.tile([0, 1], V),
        w=np.tile([0.25, 0.5], V),  # 0.75 per view
        n_gaussians=1,
        n_views=V,
        n_pixels=2,
    )
    equal_features = unit_rows(np.random.default_rng(0), V, 2, 3)
    assert effective_support(back_project(equal, equal_features))[0] == pytest.approx(V)


def test_calibrated_reliability():
    r = np.array([1.0, 0.75, 0.2, 0.9, 0.0, 0.8])
    n_eff = np.array([4.0, 4.0, 4.0, 1.0, 0.0, 2.5])
    chance = 1 / np.sqrt(2.5)
    np.testing.assert_allclose(
        calibrated(r, n_eff), [1.0, 0.5, 0.0, 0.0, 0.0, (0.8 - chance) / (1 - chance)]
    )
    np.testing.assert_allclose(calibrated_ablation(r, n_eff), r * (1 - np.exp(-n_eff / 2)), atol=0)
    weights, features = random_problem(5)
    bp = back_project(weights, features)
    rho = calibrated(reliability(bp), effective_support(bp))
    assert np.all((rho >= 0) & (rho <= 1)) and rho[0] == rho[1] == 0.0
    with pytest.raises(ValueError, match="one shape"):
        calibrated(r, n_eff[:2])


def test_nearest_neighbours_excludes_self_and_matches_brute_force():
    rng = np.random.default_rng(6)
    centers = rng.standard_normal((50, 3))
    found = nearest_neighbours(centers, 5)
    distance = np.linalg.norm(centers[:, None] - centers[None], axis=2)
    np.fill_diagonal(distance, np.inf)
    np.testing.assert_array_equal(found, np.argsort(distance, axis=1)[:, :5])
    twins = np.zeros((4, 3))  # coincident centres: g itself must still be excluded
    assert np.all(nearest_neighbours(twins, 3) != np.arange(4)[:, None])
    with pytest.raises(ValueError, match="k must lie"):
        nearest_neighbours(centers, 50)


def reference_mode_vote(features, rho, centers, k, tau, tau_c, passes, uniform):
    """Slow mode voting: brute-force kNN and explicit loops over candidate pairs."""
    distance = np.linalg.norm(centers[:, None] - centers[None], axis=2)
    np.fill_diagonal(distance, np.inf)
    f = features.copy()
    votes = np.ones(len(rho)) if uniform else rho
    order = sorted(range(len(rho)), key=lambda g: (rho[g], g))
    for _ in range(passes):
        for g in [g for g in order if rho[g] < tau]:
            members = [g, *np.argsort(distance[g])[:k]]
            scores = [sum(votes[b] for b in members if f[a] @ f[b] > tau_c) for a in members]
            f[g] = f[members[int(np.argmax(scores))]]
    return f


@pytest.mark.parametrize("passes", [1, 2])
@pytest.mark.parametrize("uniform", [False, True])
def test_mode_vote_matches_a_slow_reference_and_only_copies(passes, uniform):
    rng = np.random.default_rng(8)
    G, D, k = 80, 6, 6
    modes = unit_rows(rng, 4, D)
    features = normalise(modes[rng.integers(0, 4, G)] + 0.1 * rng.standard_normal((G, D)))
    rho = rng.random(G)
    centers = rng.standard_normal((G, 3))
    votes = "uniform" if uniform else "reliability"
    out = mode_vote(features, rho, centers, k, 0.5, 0.9, passes, votes=votes)
    expected = reference_mode_vote(features, rho, centers, k, 0.5, 0.9, passes, uniform)
    np.testing.assert_array_equal(out, expected)
    reliable = rho >= 0.5
    np.testing.assert_array_equal(out[reliable], features[reliable])
    # copy, never average: each row is an input row, and (one pass) the row a candidate held
    # when g was updated: its input row or, if updated earlier, its output row
    assert all(np.any(np.all(row == features, axis=1)) for row in out)
    if passes == 1:
        candidates = np.concatenate([np.arange(G)[:, None], nearest_neighbours(centers, k)], 1)
        for g, members in enumerate(candidates):
            held = np.concatenate([features[members], out[members]])
            assert np.any(np.all(out[g] == held, axis=1))
    assert np.any(out != features)  # the test exercises updates


def planted_scene():
    """Gaussian 0 (ρ = 0.05, feature c) sits among three reliable Gaussians agreeing on a
    (ρ = 0.9) and five unreliable ones agreeing on b (ρ = 0.2); two far Gaussians hold c."""
    rng = np.random.default_rng(9)
    a, b, c = np.eye(4)[:3]
    near = 0.1 * rng.standard_normal((8, 3))
    features = np.array(
        [c] + [normalise(a + 0.05 * rng.standard_normal(4)) for _ in range(3)] + [b] * 5 + [c, c]
    )
    rho = np.array([0.05, 0.9, 0.9, 0.9, 0.2, 0.2, 0.2, 0.2, 0.2, 0.95, 0.95])
    centers = np.concatenate([[[0.0, 0.0, 0.0]], near, [[50.0, 0, 0], [51.0, 0, 0]]])
    return features, rho, centers, a, b


def test_mode_vote_planted_unreliable_gaussian_takes_the_reliable_mode():
    features, rho, centers, a, b = planted_scene()
    out = mode_vote(features, rho, centers, k=8, tau=0.5, tau_c=0.9, passes=1)
    assert any(np.array_equal(out[0], features[j]) for j in (1, 2, 3))
    np.testing.assert_array_equal(out[1:4], features[1:4])
    # sequential: once Gaussian 0 holds a, the b Gaussians (ρ = 0.2, later) see 3.75 > 1.0
    assert all(any(np.array_equal(row, features[j]) for j in (1, 2, 3)) for row in out[4:9])
    uniform = mode_vote(features, rho, centers, 8, 0.5, 0.9, 1, votes="uniform")
    np.testing.assert_array_equal(uniform[0], b)  # five votes beat three without reliability
    averaged = mode_vote(features, rho, centers, 8, 0.5, 0.9, 1, mode_average=True)
    np.testing.assert_allclose(averaged[0], normalise(features[1:4].mean(axis=0)), atol=1e-12)
    assert averaged[0] @ a > 0.99


def test_mode_vote_without_votes_changes_nothing_and_checks_arguments():
    features, rho, centers, _, _ = planted_scene()
    zero = np.zeros_like(rho)
    np.testing.assert_array_equal(mode_vote(features, zero, centers, 4, 0.5, 0.9, 1), features)
    with pytest.raises(ValueError, match="votes must be"):
        mode_vote(features, rho, centers, 4, 0.5, 0.9, 1, votes="equal")
    with pytest.raises(ValueError, match="agree on G"):
        mode_vote(features, rho[:-1], centers, 4, 0.5, 0.9, 1)


def test_weighted_average_and_normalised_give_the_same_labels():
    weights, features = random_problem(10)
    bp = back_project(weights, features)
    text = unit_rows(np.random.default_rng(11), 5, features.shape[2])
    labels = query_labels(normalise(bp.b), text)
    np.testing.assert_array_equal(query_labels(weighted_average(bp), text), labels)
    np.testing.assert_array_equal(labels, np.argmax(normalise(bp.b) @ text.T, axis=1))
    assert labels[0] == 0  # unobserved: zero feature, zero scores


def test_max_weight_picks_the_heaviest_pixel_and_the_first_of_ties():
    weights, features = random_problem(12)
    lifted = max_weight(weights, features)
    for g in range(weights.n_gaussians):
        entries = np.nonzero(weights.g == g)[0]
        if len(entries) == 0:
            assert np.all(lifted[g] == 0)
            continue
        best = entries[np.argmax(weights.w[entries])]
        np.testing.assert_array_equal(lifted[g], features[weights.v[best], weights.p[best]])
    tie = Weights(
        g=[0, 0, 0],
        v=[0, 0, 0],
        p=[2, 0, 1],
        w=[0.3, 0.5, 0.5],
        n_gaussians=1,
        n_views=1,
        n_pixels=3,
    )
    pixels = np.eye(3)[None]
    np.testing.assert_array_equal(max_weight(tie, pixels)[0], pixels[0, 0])


def test_knn_average_is_the_normalised_neighbourhood_mean():
    rng = np.random.default_rng(13)
    features = unit_rows(rng, 40, 5)
    centers = rng.standard_normal((40, 3))
    found = nearest_neighbours(centers, 4)
    expected = normalise(np.stack([features[[g, *found[g]]].mean(axis=0) for g in range(40)]))
    np.testing.assert_allclose(knn_average(features, centers, 4), expected, atol=1e-12)


def distill_loss(weights: Weights, features: np.ndarray, lifted: np.ndarray) -> float:
    rendered = np.zeros(features.shape)
    for g, v, p, w in zip(weights.g, weights.v, weights.p, weights.w, strict=True):
        rendered[v, p] += w * lifted[g]
    covered = np.zeros(features.shape[:2], dtype=bool)
    covered[weights.v, weights.p] = True
    return float(np.mean(np.sum((rendered - features)[covered] ** 2, axis=1)))


def test_distill_reduces_the_loss_and_is_deterministic():
    weights, _ = random_problem(14)
    truth = np.random.default_rng(15).standard_normal((30, 8))
    features = np.zeros((5, 40, 8))  # rendered from `truth`, so the optimum loss is 0
    for g, v, p, w in zip(weights.g, weights.v, weights.p, weights.w, strict=True):
        features[v, p] += w * truth[g]
    start = distill(weights, features, steps=0, lr=0.05, seed=3)
    assert np.abs(start).max() < 0.01  # small seeded noise
    trained = distill(weights, features, steps=60, lr=0.05, seed=3)
    assert trained.dtype == np.float64 and trained.shape == (30, 8)
    assert distill_loss(weights, features, trained) < 0.01 * distill_loss(weights, features, start)
    assert np.array_equal(trained, distill(weights, features, steps=60, lr=0.05, seed=3))
    assert not np.array_equal(start, distill(weights, features, steps=0, lr=0.05, seed=4))


def test_render_labels_on_two_gaussians():
    weights = Weights(
        g=[0, 1, 1, 0, 1, 0],
        v=[0, 0, 0, 0, 0, 1],
        p=[0, 0, 1, 3, 3, 2],
        w=[0.6, 0.3, 0.4, 0.2, 0.5, 0.9],
        n_gaussians=2,
        n_views=2,
        n_pixels=4,
    )
    labels = np.array([2, 0])
    np.testing.assert_array_equal(render_labels(weights, labels, 3, 0), [2, 0, -1, 0])
    np.testing.assert_array_equal(render_labels(weights, labels, 3, 1), [-1, -1, 2, -1])
    same = render_labels(weights, np.array([1, 1]), 3, 0)
    np.testing.assert_array_equal(same, [1, 1, -1, 1])
    with pytest.raises(ValueError, match="gaussian_labels must lie"):
        render_labels(weights, labels, 2, 0)
