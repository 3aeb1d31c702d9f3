"""One decentralised bilevel method family, run for many (method, noise) runs at once.

Every method keeps, per node, the three blocks z = (y, v, x) (lower-level weights, linear-system
solution, hyperparameters), a direction estimate d and a gradient tracker s per block, and does
per iteration t, for each block with stochastic direction G(z; ξ) (problem.directions + σ·ζ):

    d^t = β G(z^t; ξ_t) + (1 − β) (d^{t−1} + vr · (G(z^t; ξ_t) − G(z^{t−1}; ξ_t)))
    s^t = W s^{t−1} + d^t − d^{t−1}                       (gradient tracking, s^0 = d^0)
    z^{t+1} = W z^t − η · step(s^t)

`estimator` sets (β, vr): ``sgd`` β = 1 (plain minibatch estimate), ``momentum`` vr = 0 (EMA),
``storm`` vr = 1 (STORM variance reduction; the two evaluations share the minibatch *and* the
noise draw ζ_t, as two evaluations on one real sample would). `direction` sets step(s):
``raw`` s, ``clip`` s · min(1, τ/‖s‖), ``normalize`` s/‖s‖, the norm taken per node and block.
D-NSVRB (the paper's method) = storm + normalize; D-NSGDM = momentum + normalize; D-SGD = sgd +
raw; D-Clip(τ) = sgd + clip. All runs of one call share the graph, the minibatch indices and,
per noise setting, the noise draws (common random numbers, so methods are compared on the same
noise path). The hyperparameters are projected onto the box λ ∈ [lo, hi] after every step (all
methods alike). A run diverges when an iterate is not finite or some |y|, |v| exceeds `bound`;
it is frozen at zero from then on and its later evaluations are NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from reprolab.studies.bilevel_ht.noise import sample_noise
from reprolab.studies.bilevel_ht.problem import NodeData, directions, exact_evaluation

ESTIMATORS = ("sgd", "momentum", "storm")
STEPS = ("raw", "clip", "normalize")
BLOCKS = ("y", "v", "x")


@dataclass(frozen=True)
class Method:
    """One method's update rule and step sizes (see the module docstring)."""

    estimator: str
    direction: str
    beta: float
    threshold: float
    eta: dict[str, float]

    def __post_init__(self) -> None:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"method.estimator: {self.estimator!r}; known: {ESTIMATORS}")
        if self.direction not in STEPS:
            raise ValueError(f"method.direction: {self.direction!r}; known: {STEPS}")
        if not 0 < self.beta <= 1:
            raise ValueError(f"method.beta: need 0 < beta <= 1, got {self.beta}")
        if sorted(self.eta) != sorted(BLOCKS):
            raise ValueError(f"method.eta: need keys {BLOCKS}, got {sorted(self.eta)}")

    @classmethod
    def from_params(cls, values: dict[str, Any], eta_scale: float = 1.0) -> Method:
        """A Method from its params.yaml entry, its step sizes the entry's `eta_base` times
        `eta_scale` (the multiplier the `bilevel_ht_tune_method` job selects)."""
        return cls(
            estimator=values["estimator"],
            direction=values["direction"],
            beta=1.0 if values["estimator"] == "sgd" else float(values["beta"]),
            threshold=float(values["threshold"]),
            eta={k: float(v) * float(eta_scale) for k, v in values["eta_base"].items()},
        )


@dataclass(frozen=True)
class Noise:
    """Oracle noise σ·ζ, ζ i.i.d. of `kind` with tail index `tail`."""

    kind: str
    tail: float
    sigma: float


def gossip(w: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Σ_j W_ij z_j for arrays [R, blocks, m, p]."""
    return np.matmul(w, z)


def estimate_update(
    g: np.ndarray, correction: np.ndarray, d: np.ndarray, beta: np.ndarray | float
) -> np.ndarray:
    """d^t = β g + (1 − β)(d^{t−1} + correction); correction = G(z^t; ξ) − G(z^{t−1}; ξ) or 0."""
    return beta * g + (1.0 - beta) * (d + correction)


def tracking_update(w: np.ndarray, s: np.ndarray, d_new: np.ndarray, d: np.ndarray) -> np.ndarray:
    """s^t = W s^{t−1} + d^t − d^{t−1}; keeps mean_i s_i = mean_i d_i for doubly stochastic W."""
    return gossip(w, s) + d_new - d


def step_direction(s: np.ndarray, mode: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """step(s) per run: raw (mode 0), clipped to norm τ (1) or normalised (2), per node/block."""
    norm = np.linalg.norm(s, axis=-1, keepdims=True)
    safe = np.where(norm > 0, norm, 1.0)
    scale = np.where(mode == 2, 1.0 / safe, np.where(mode == 1, np.minimum(1.0, tau / safe), 1.0))
    return s * scale


def _all_directions(
    data: NodeData, z: np.ndarray, train_idx: np.ndarray, val_idx: np.ndarray
) -> np.ndarray:
    """Noise-free directions of every block, [R, 3, m, p]."""
    g_y, g_v, g_x = directions(data, z[:, 2], z[:, 0], z[:, 1], train_idx, val_idx)
    return np.stack([g_y, g_v, g_x], axis=1)


def run_methods(
    data: NodeData,
    w: np.ndarray,
    methods: list[Method],
    noises: list[Noise],
    iterations: int,
    batch: int,
    eval_every: int,
    box: tuple[float, float],
    bound: float,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Run every (noise, method) pair for `iterations` steps; runs are ordered noise-major.

    Returns curves at iterations 0, eval_every, ..., iterations: `iter` [E] and [R, E] arrays `F`,
    `gradnorm2`, `accuracy`, `consensus` (mean_i ‖x_i − x̄‖²), plus `diverged_at` [R] (first
    iteration whose iterate diverged, −1 if none) and the final node-average λ̄ `lambda` [R, p].
    """
    n_runs, m, p = len(noises) * len(methods), data.nodes, data.features
    per_run = [(k, meth) for k in range(len(noises)) for meth in methods]
    noise_of = np.array([k for k, _ in per_run])
    beta = np.array([meth.beta for _, meth in per_run])[:, None, None, None]
    vr = np.array([meth.estimator == "storm" for _, meth in per_run])
    mode = np.array([STEPS.index(meth.direction) for _, meth in per_run])[:, None, None, None]
    tau = np.array([meth.threshold for _, meth in per_run])[:, None, None, None]
    eta = np.array([[meth.eta[b] for b in BLOCKS] for _, meth in per_run])[:, :, None, None]
    sigma = np.array([nz.sigma for nz in noises])[:, None, None, None]
    alive = np.ones(n_runs, dtype=bool)
    diverged_at = np.full(n_runs, -1)
    z = np.zeros((n_runs, 3, m, p))
    z_prev = d = s = None
    checkpoints = list(range(0, iterations + 1, eval_every))
    if checkpoints[-1] != iterations:
        checkpoints.append(iterations)
    keys = ("F", "gradnorm2", "accuracy", "consensus")
    curves = {key: np.full((n_runs, len(checkpoints)), np.nan) for key in keys}
    w_star = None
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(iterations + 1):
            if t in checkpoints:
                j = checkpoints.index(t)
                lam = z[:, 2].mean(axis=1)
                ev = exact_evaluation(data, lam, box, w_star)
                w_star = np.where(alive[:, None], ev["w"], 0.0)
                for key in ("F", "gradnorm2", "accuracy"):
                    curves[key][alive, j] = ev[key][alive]
                spread = np.sum((z[:, 2] - lam[:, None]) ** 2, axis=-1).mean(axis=1)
                curves["consensus"][alive, j] = spread[alive]
            if t == iterations:
                break
            train_idx = rng.integers(0, data.a_train.shape[1], size=(m, batch))
            val_idx = rng.integers(0, data.a_val.shape[1], size=(m, batch))
            zeta = np.stack([sample_noise(rng, nz.kind, nz.tail, (3, m, p)) for nz in noises])
            zeta = (sigma * zeta)[noise_of]
            g = _all_directions(data, z, train_idx, val_idx) + zeta
            if d is None:
                d_new = g
            else:
                correction = np.zeros_like(g)
                if vr.any():
                    g_prev = _all_directions(data, z_prev[vr], train_idx, val_idx) + zeta[vr]
                    correction[vr] = g[vr] - g_prev
                d_new = estimate_update(g, correction, d, beta)
            s = d_new if s is None else tracking_update(w, s, d_new, d)
            d = d_new
            z_prev = z
            z = gossip(w, z) - alive[:, None, None, None] * eta * step_direction(s, mode, tau)
            z[:, 2] = np.clip(z[:, 2], *box)
            bad = alive & ~np.all(np.isfinite(z) & (np.abs(z) <= bound), axis=(1, 2, 3))
            if bad.any():
                diverged_at[bad] = t + 1
                alive &= ~bad
                for arr in (z, z_prev, d, s):
                    arr[bad] = 0.0
    return {
        "iter": np.asarray(checkpoints),
        **curves,
        "diverged_at": diverged_at,
        "lambda": z[:, 2].mean(axis=1),
    }
