"""Lifting 2-D unit-norm feature maps onto 3-D Gaussians: the closed form, its reliability and
mode voting, with the baselines they are compared against.

Inputs (arrays only; the scene generator and the rasteriser live elsewhere):

* `Weights`: the sparse α-compositing weights of the lifting views, one entry per
  (Gaussian g, view v, pixel p) triple that contributes, with w > 0; pixels are numbered
  row-major within a view, and no two entries share a triple (checked).
* `features`: [V, P, D] unit vectors F_v(p), one per pixel of each lifting view.
* `centers`: [G, 3] Gaussian means, used only for the 3-D k nearest neighbours.
* `text`: [C, D] unit text embeddings, one per class.

Method. Back-projection gives b_g = Σ w F_v(p) and W_g = Σ w, and per view W_{g,v} and the
mean m_{g,v} = Σ_p w F / W_{g,v}. f_g = b_g/‖b_g‖ maximises Σ w⟨f, F⟩ on the unit sphere
(Cauchy–Schwarz). Its reliability r_g = ‖b_g‖/W_g ∈ [0, 1] (the mean resultant length)
splits, with ω_v = W_{g,v}/W_g and I_v = ‖m_{g,v}‖, as r² = intra + inter where
intra = Σ_v ω_v² I_v² and inter = Σ_{v≠v'} ω_v ω_{v'} ⟨m_v, m_{v'}⟩; each term is computed
from its own formula (inter from the off-diagonal of each Gaussian's view Gram matrix) so the
identity is a check, not a tautology. The Kish effective number of views
N_eff = (Σ_v W_{g,v})² / Σ_v W_{g,v}² ∈ [1, V] sets the chance level r₀ = 1/√N_eff of the
resultant length, and the calibrated reliability is ρ = clip((r − r₀)/(1 − r₀), 0, 1)
(ρ = 0 at N_eff = 1); the ablation ρ' = r (1 − exp(−N_eff/2)) discounts instead of
subtracting chance. A Gaussian that no view sees has b = 0, W = 0, N_eff = 0 and r = ρ = 0,
and its lifted feature is the zero vector.

Mode voting refines the unreliable Gaussians (ρ < τ) one at a time in order of increasing ρ
(ties by index), sequentially (a later Gaussian sees the copies made before it in the same
pass): among {g} and its k nearest neighbours each candidate is scored by the reliability mass
of the candidates within cosine τ_c of it, and g copies the winner's feature (never an
average, except in the `mode_average` ablation). Reliabilities are not copied.

Determinism: the sums run in a fixed order (scipy.sparse CSR products, np.bincount,
single-threaded cKDTree queries; the small Gram products of `decomposition` and `mode_vote`
go through BLAS, fixed for a fixed BLAS thread count), so the same inputs give bit-identical
outputs. `distill` uses torch; the caller sets torch's thread count.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp
import torch
from scipy.spatial import cKDTree

GRAM_CHUNK_ELEMENTS = 1 << 22
"""Size (in float64 elements) of one chunk of per-Gaussian [V, D] blocks in `decomposition`."""

DISTILL_INIT_SCALE = 1e-3
"""Standard deviation of the seeded Gaussian noise that initialises `distill`'s features."""

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
"""Adam's moment decay rates and denominator offset in `distill` (torch.optim.Adam's)."""


@dataclass(frozen=True, eq=False)
class Weights:
    """Sparse α-compositing weights: entry i says Gaussian g[i] has weight w[i] > 0 at pixel
    p[i] (row-major) of view v[i]. Index arrays are cast to int64 and w to float64; the
    constructor checks lengths, ranges, positivity and that no (g, v, p) triple repeats.
    Arrays are compared by identity (eq=False), since element-wise == has no truth value."""

    g: np.ndarray
    v: np.ndarray
    p: np.ndarray
    w: np.ndarray
    n_gaussians: int
    n_views: int
    n_pixels: int

    def __post_init__(self) -> None:
        for name in ("n_gaussians", "n_views", "n_pixels"):
            if int(getattr(self, name)) < 1:
                raise ValueError(
                    f"normlift: Weights.{name} must be >= 1, got {getattr(self, name)}"
                )
        sizes = {"g": self.n_gaussians, "v": self.n_views, "p": self.n_pixels}
        for name, size in sizes.items():
            array = np.asarray(getattr(self, name))
            if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
                raise ValueError(f"normlift: Weights.{name} must be a 1-D integer array")
            array = array.astype(np.int64, copy=False)
            if array.size and (array.min() < 0 or array.max() >= size):
                raise ValueError(f"normlift: Weights.{name} must lie in [0, {size})")
            object.__setattr__(self, name, array)
        w = np.asarray(self.w, dtype=np.float64)
        object.__setattr__(self, "w", w)
        if w.ndim != 1 or not len(self.g) == len(self.v) == len(self.p) == len(w):
            raise ValueError(
                f"normlift: Weights.g, v, p, w must be 1-D of one length, got "
                f"{len(self.g)}, {len(self.v)}, {len(self.p)}, {len(w)}"
            )
        if not np.all(np.isfinite(w) & (w > 0)):
            raise ValueError("normlift: Weights.w must be finite and > 0")
        triple = (self.g * self.n_views + self.v) * self.n_pixels + self.p
        if len(np.unique(triple)) != len(triple):
            raise ValueError("normlift: Weights has repeated (g, v, p) entries")

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return len(self.w)


@dataclass(frozen=True, eq=False)
class BackProjection:
    """Back-projected sums of one scene. b [G, D] = Σ w F and total [G] = W_g = Σ w;
    view_weight [G, V] = W_{g,v}. The per-view means are kept only for the (g, v) pairs with
    W_{g,v} > 0, sorted by g then v: pair_gaussian, pair_view [K] and pair_mean [K, D]
    (dense [G, V, D] means would dominate memory on large scenes)."""

    b: np.ndarray
    total: np.ndarray
    view_weight: np.ndarray
    pair_gaussian: np.ndarray
    pair_view: np.ndarray
    pair_mean: np.ndarray


def _check_features(weights: Weights, features: np.ndarray) -> None:
    """Raise unless `features` is [V, P, D] for the views and pixels of `weights`."""
    if features.ndim != 3 or features.shape[:2] != (weights.n_views, weights.n_pixels):
        raise ValueError(
            f"normlift: features must have shape [V={weights.n_views}, P={weights.n_pixels}, D]"
            f", got {features.shape}"
        )


def back_project(weights: Weights, features: np.ndarray) -> BackProjection:
    """b, W and the per-view weights and means, by scipy.sparse CSR products (fixed order)."""
    _check_features(weights, features)
    n_views, n_pixels = weights.n_views, weights.n_pixels
    flat = np.asarray(features, dtype=np.float64).reshape(n_views * n_pixels, -1)
    column = weights.v * n_pixels + weights.p
    shape = (weights.n_gaussians, n_views * n_pixels)
    pixel_matrix = sp.csr_matrix((weights.w, (weights.g, column)), shape=shape)
    b = pixel_matrix @ flat
    total = np.bincount(weights.g, weights=weights.w, minlength=weights.n_gaussians)

    pair, row = np.unique(weights.g * n_views + weights.v, return_inverse=True)
    view_matrix = sp.csr_matrix((weights.w, (row, column)), shape=(len(pair), shape[1]))
    pair_weight = np.bincount(row, weights=weights.w, minlength=len(pair))
    view_weight = np.zeros(weights.n_gaussians * n_views)
    view_weight[pair] = pair_weight
    return BackProjection(
        b=b,
        total=total,
        view_weight=view_weight.reshape(weights.n_gaussians, n_views),
        pair_gaussian=pair // n_views,
        pair_view=pair % n_views,
        pair_mean=(view_matrix @ flat) / pair_weight[:, None],
    )


def _safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (the unobserved Gaussians)."""
    positive = denominator > 0
    return np.where(positive, numerator, 0.0) / np.where(positive, denominator, 1.0)


def normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit norm, zero rows left zero; normalise(b) is the closed-form lift."""
    return _safe_divide(x, np.linalg.norm(x, axis=-1, keepdims=True))


def weighted_average(bp: BackProjection) -> np.ndarray:
    """Baseline: the weighted mean b/W, not normalised (zero for unobserved Gaussians)."""
    return _safe_divide(bp.b, bp.total[:, None])


def reliability(bp: BackProjection) -> np.ndarray:
    """r_g = ‖b_g‖/W_g, the mean resultant length of the weighted features (0 where W = 0).
    Not clipped: r ≤ 1 holds for unit features up to rounding, and clipping would break the
    identity r² = intra + inter."""
    return _safe_divide(np.linalg.norm(bp.b, axis=1), bp.total)


def decomposition(bp: BackProjection) -> tuple[np.ndarray, np.ndarray]:
    """(intra, inter) with r² = intra + inter: intra = Σ_v ω_v² ‖m_v‖² from the per-view
    means, inter = Σ_{v≠v'} ω_v ω_{v'} ⟨m_v, m_{v'}⟩ from the off-diagonal of each Gaussian's
    [V, V] Gram matrix of ω_v m_v, built in chunks of Gaussians to bound memory."""
    n_gaussians, n_views = bp.view_weight.shape
    dim = bp.pair_mean.shape[1]
    omega = bp.view_weight[bp.pair_gaussian, bp.pair_view] / bp.total[bp.pair_gaussian]
    strength = np.linalg.norm(bp.pair_mean, axis=1)
    intra = np.bincount(bp.pair_gaussian, weights=(omega * strength) ** 2, minlength=n_gaussians)
    scaled = omega[:, None] * bp.pair_mean
    inter = np.zeros(n_gaussians)
    off_diagonal = ~np.eye(n_views, dtype=bool)
    chunk = max(1, GRAM_CHUNK_ELEMENTS // (n_views * dim))
    for start in range(0, n_gaussians, chunk):
        stop = min(n_gaussians, start + chunk)
        lo, hi = np.searchsorted(bp.pair_gaussian, [start, stop])
        block = np.zeros((stop - start, n_views, dim))
        block[bp.pair_gaussian[lo:hi] - start, bp.pair_view[lo:hi]] = scaled[lo:hi]
        gram = block @ block.transpose(0, 2, 1)
        inter[start:stop] = gram[:, off_diagonal].sum(axis=1)
    return intra, inter


def effective_support(bp: BackProjection) -> np.ndarray:
    """Kish effective number of views N_eff = (Σ_v W_{g,v})² / Σ_v W_{g,v}² ∈ [1, V]; 0 for
    an unobserved Gaussian. Exactly 1 when a single view sees the Gaussian."""
    first = bp.view_weight.sum(axis=1)
    return _safe_divide(first**2, (bp.view_weight**2).sum(axis=1))


def calibrated(r: np.ndarray, n_eff: np.ndarray) -> np.ndarray:
    """ρ = clip((r − r₀)/(1 − r₀), 0, 1) with the chance level r₀ = 1/√N_eff: the excess of
    the resultant length over what N_eff random directions would give. ρ = 0 where
    N_eff ≤ 1 (one view, or none, carries no evidence of multi-view agreement)."""
    if r.shape != n_eff.shape:
        raise ValueError(f"normlift: r {r.shape} and n_eff {n_eff.shape} must have one shape")
    several = n_eff > 1.0
    chance = 1.0 / np.sqrt(np.where(several, n_eff, 1.0))
    excess = _safe_divide(np.where(several, r - chance, 0.0), 1.0 - chance)
    return np.clip(excess, 0.0, 1.0)


def calibrated_ablation(r: np.ndarray, n_eff: np.ndarray) -> np.ndarray:
    """Ablation ρ' = r (1 − exp(−N_eff/2)): support discounts r instead of setting its chance
    level (0 for an unobserved Gaussian since r = 0 there)."""
    if r.shape != n_eff.shape:
        raise ValueError(f"normlift: r {r.shape} and n_eff {n_eff.shape} must have one shape")
    return r * (1.0 - np.exp(-n_eff / 2.0))


def nearest_neighbours(centers: np.ndarray, k: int) -> np.ndarray:
    """[G, k] indices of each Gaussian's k nearest other Gaussians in 3-D (cKDTree, one
    worker, nearest first). g itself is removed even when a coincident centre precedes it."""
    if centers.ndim != 2 or centers.shape[1] != 3:
        raise ValueError(f"normlift: centers must have shape [G, 3], got {centers.shape}")
    n_gaussians = len(centers)
    if not 1 <= k < n_gaussians:
        raise ValueError(f"normlift: k must lie in [1, G - 1 = {n_gaussians - 1}], got {k}")
    _, found = cKDTree(centers).query(centers, k=k + 1)
    is_self = found == np.arange(n_gaussians)[:, None]
    is_self[~is_self.any(axis=1), -1] = True
    return found[~is_self].reshape(n_gaussians, k)


def mode_vote(
    features: np.ndarray,
    rho: np.ndarray,
    centers: np.ndarray,
    k: int,
    tau: float,
    tau_c: float,
    passes: int,
    votes: Literal["reliability", "uniform"] = "reliability",
    mode_average: bool = False,
) -> np.ndarray:
    """Refined features [G, D]: each Gaussian with ρ < τ, in order of increasing ρ (ties by
    index) and sequentially, copies the feature of the candidate j ∈ {g} ∪ kNN_k(g) with the
    largest S_j = Σ_{j'} v_{j'} 1[cos(f_j, f_{j'}) > τ_c], v = ρ (`votes="reliability"`) or
    1 (`"uniform"`, ablation); ties go to the first candidate, g first. `mode_average`
    (ablation) sets f_g to the normalised mean of the winning mode's members instead. Zero
    features have cosine 0 with everything, so they neither vote nor win (a zero winner, which
    has no members, leaves f_g as it is). ρ stays fixed over `passes`; the input is not
    modified."""
    if features.ndim != 2 or rho.shape != (len(features),) or len(centers) != len(features):
        raise ValueError(
            f"normlift: features [G, D], rho [G] and centers [G, 3] must agree on G, got "
            f"{features.shape}, {rho.shape}, {centers.shape}"
        )
    if votes not in ("reliability", "uniform"):
        raise ValueError(f"normlift: votes must be 'reliability' or 'uniform', got {votes!r}")
    if passes < 1:
        raise ValueError(f"normlift: passes must be >= 1, got {passes}")
    refined = np.array(features, dtype=np.float64)
    unit = normalise(refined)
    vote = np.asarray(rho, dtype=np.float64) if votes == "reliability" else np.ones(len(rho))
    candidates = np.concatenate(
        [np.arange(len(features))[:, None], nearest_neighbours(centers, k)], axis=1
    )
    order = np.argsort(rho, kind="stable")
    order = order[rho[order] < tau]
    for _ in range(passes):
        for g in order:
            members = candidates[g]
            agree = (unit[members] @ unit[members].T) > tau_c
            winner = int(np.argmax(agree @ vote[members]))
            if not mode_average:
                unit[g] = unit[members[winner]]
                refined[g] = refined[members[winner]]
            elif agree[winner].any():
                unit[g] = normalise(unit[members[agree[winner]]].mean(axis=0))
                refined[g] = unit[g]
    return refined


def max_weight(weights: Weights, features: np.ndarray) -> np.ndarray:
    """Baseline: f_g = F at the entry with the largest w for g (ties: the first entry);
    zero for an unobserved Gaussian."""
    _check_features(weights, features)
    order = np.lexsort((np.arange(weights.nnz), -weights.w, weights.g))
    gaussians, first = np.unique(weights.g[order], return_index=True)
    best = order[first]
    lifted = np.zeros((weights.n_gaussians, features.shape[2]))
    lifted[gaussians] = features[weights.v[best], weights.p[best]]
    return lifted


def knn_average(features: np.ndarray, centers: np.ndarray, k: int) -> np.ndarray:
    """Baseline: linear smoothing, the normalised mean of f over {g} ∪ kNN_k(g), with no
    reliability; sums run neighbour by neighbour to keep memory at [G, D]."""
    if features.ndim != 2 or len(centers) != len(features):
        raise ValueError(
            f"normlift: features [G, D] and centers [G, 3] must agree on G, got "
            f"{features.shape}, {centers.shape}"
        )
    features = np.asarray(features, dtype=np.float64)
    total = features.copy()
    for column in nearest_neighbours(centers, k).T:
        total += features[column]
    return normalise(total)


def distill(weights: Weights, features: np.ndarray, steps: int, lr: float, seed: int) -> np.ndarray:
    """Baseline: unconstrained f [G, D] fitted by `steps` Adam steps of size `lr` to
    L = mean over the covered pixels of ‖Σ_g w f_g − F_v(p)‖² (uncovered pixels add a constant
    and are dropped), in float64 with a torch sparse CSR matrix R (covered pixels × G; twice as
    fast as COO on one thread) and the
    exact gradient (2/M) Rᵀ(R f − F). f starts as N(0, DISTILL_INIT_SCALE²) noise from a local
    generator seeded by `seed` (no global torch state is touched). Adam is written out with
    torch.optim.Adam's defaults (betas 0.9, 0.999, eps 1e-8): constructing torch.optim.Adam
    imports torch._dynamo, about 2 s per process. The caller sets torch's thread count; the
    same inputs and threads give bit-identical outputs. Returns float64 numpy."""
    _check_features(weights, features)
    if steps < 0:
        raise ValueError(f"normlift: steps must be >= 0, got {steps}")
    covered, row = np.unique(weights.v * weights.n_pixels + weights.p, return_inverse=True)
    index = torch.from_numpy(np.stack([row, weights.g]))
    values = torch.from_numpy(weights.w)
    size = (len(covered), weights.n_gaussians)
    render = torch.sparse_coo_tensor(index, values, size, check_invariants=True)
    transposed = torch.sparse_coo_tensor(index.flip(0), values, size[::-1], check_invariants=True)
    with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state"
        warnings.simplefilter("ignore", UserWarning)
        render, transposed = (m.coalesce().to_sparse_csr() for m in (render, transposed))
    flat = np.asarray(features, dtype=np.float64).reshape(-1, features.shape[2])
    target = torch.from_numpy(flat[covered])
    generator = torch.Generator().manual_seed(seed)
    shape = (weights.n_gaussians, features.shape[2])
    lifted = DISTILL_INIT_SCALE * torch.randn(shape, generator=generator, dtype=torch.float64)
    first = torch.zeros_like(lifted)
    second = torch.zeros_like(lifted)
    beta1, beta2 = ADAM_BETAS
    for step in range(1, steps + 1):
        residual = render @ lifted - target
        gradient = (transposed @ residual) * (2.0 / len(covered))
        first.mul_(beta1).add_(gradient, alpha=1.0 - beta1)
        second.mul_(beta2).addcmul_(gradient, gradient, value=1.0 - beta2)
        denominator = (second / (1.0 - beta2**step)).sqrt_().add_(ADAM_EPS)
        lifted.addcdiv_(first, denominator, value=-lr / (1.0 - beta1**step))
    return lifted.numpy().copy()


def query_labels(features: np.ndarray, text: np.ndarray) -> np.ndarray:
    """[G] int64 labels argmax_c cos(f_g, t_c); f need not be unit (a scale does not change
    the argmax), and a zero row scores 0 for every class, so its label is 0."""
    if features.ndim != 2 or text.ndim != 2 or features.shape[1] != text.shape[1]:
        raise ValueError(
            f"normlift: features [G, D] and text [C, D] must share D, got "
            f"{features.shape}, {text.shape}"
        )
    return np.argmax(normalise(features) @ normalise(text).T, axis=1).astype(np.int64)


def render_labels(
    weights: Weights, gaussian_labels: np.ndarray, n_classes: int, view: int
) -> np.ndarray:
    """[P] int64 label map of `view`: argmax_c Σ_g w 1[label_g = c] per pixel (ties: lowest
    class), -1 where no Gaussian has weight."""
    if gaussian_labels.shape != (weights.n_gaussians,):
        raise ValueError(
            f"normlift: gaussian_labels must have shape [{weights.n_gaussians}], "
            f"got {gaussian_labels.shape}"
        )
    if not np.issubdtype(gaussian_labels.dtype, np.integer):
        raise ValueError(f"normlift: gaussian_labels must be integers, got {gaussian_labels.dtype}")
    if gaussian_labels.size and (gaussian_labels.min() < 0 or gaussian_labels.max() >= n_classes):
        raise ValueError(f"normlift: gaussian_labels must lie in [0, n_classes = {n_classes})")
    if not 0 <= view < weights.n_views:
        raise ValueError(f"normlift: view must lie in [0, {weights.n_views}), got {view}")
    here = weights.v == view
    pixel = weights.p[here]
    mass = np.bincount(
        pixel * n_classes + gaussian_labels[weights.g[here]],
        weights=weights.w[here],
        minlength=weights.n_pixels * n_classes,
    ).reshape(weights.n_pixels, n_classes)
    seen = np.bincount(pixel, minlength=weights.n_pixels) > 0
    return np.where(seen, np.argmax(mass, axis=1), -1).astype(np.int64)
