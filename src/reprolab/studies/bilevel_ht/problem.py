"""The bilevel problem: per-feature L2 regularisation of logistic regression, and its oracles.

Node i holds training data (A_i, b_i) and validation data (A'_i, b'_i), labels ±1. With x = λ ∈ R^p
(log regularisation strengths) and y = w ∈ R^p the weights,

    g_i(λ, w) = mean_train_i log(1 + exp(−b a·w)) + ½ Σ_k e^{λ_k} w_k²   (strongly convex in w)
    f_i(w)    = mean_val_i   log(1 + exp(−b a·w))
    F(λ)      = (1/m) Σ_i f_i(w*(λ)),   w*(λ) = argmin_w (1/m) Σ_i g_i(λ, w)   (nonconvex in λ).

Implicit differentiation gives ∇F(λ) = −∇²_{λw} g · v* = −e^λ ⊙ w* ⊙ v*, where v* solves
∇²_{ww} g · v = ∇_w f and ∇²_{ww} g · v = Aᵀ diag(s(1−s)) A v / n + e^λ ⊙ v (closed forms; f has no
direct dependence on λ). `directions` evaluates the three stochastic directions of a
decentralised method (lower-level gradient, linear-system residual H v − ∇_w f, hypergradient
estimate) on minibatches, batched over runs and nodes: arrays [runs, nodes, p].
`exact_evaluation` solves the global lower level by Newton's method at the node average λ̄ and
returns F, the stationarity measure and test accuracy, batched over runs. λ lives in a box
[lo, hi] (see optim), so stationarity is measured by the gradient mapping.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit


@dataclass(frozen=True)
class NodeData:
    """Per-node train/validation arrays [m, n, p] and [m, n] (labels ±1) and a global test set."""

    a_train: np.ndarray
    b_train: np.ndarray
    a_val: np.ndarray
    b_val: np.ndarray
    a_test: np.ndarray
    b_test: np.ndarray

    @property
    def nodes(self) -> int:
        """Number of nodes m."""
        return self.a_train.shape[0]

    @property
    def features(self) -> int:
        """Number of features p (= dimension of x and of y)."""
        return self.a_train.shape[2]


def _rows_times(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """a_i w_i per run and node: a [m, n, p], w [R, m, p] → [R, m, n] (batched matmul)."""
    return np.matmul(a, w[..., None])[..., 0]


def _rows_transpose_times(a: np.ndarray, u: np.ndarray) -> np.ndarray:
    """a_iᵀ u_i per run and node: a [m, n, p], u [R, m, n] → [R, m, p]."""
    return np.matmul(u[..., None, :], a)[..., 0, :]


def loss_gradient(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Minibatch logistic-loss gradient per run and node: a [m,n,p], b [m,n], w [R,m,p]."""
    margin = b * _rows_times(a, w)
    return -_rows_transpose_times(a, b * expit(-margin)) / a.shape[1]


def loss_hvp(a: np.ndarray, w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Logistic-loss Hessian (at w) times v per run and node; labels drop out of the Hessian."""
    s = expit(_rows_times(a, w))
    return _rows_transpose_times(a, s * (1.0 - s) * _rows_times(a, v)) / a.shape[1]


def directions(
    data: NodeData,
    x: np.ndarray,
    y: np.ndarray,
    v: np.ndarray,
    train_idx: np.ndarray,
    val_idx: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Noise-free minibatch directions (G_y, G_v, G_x), each [R, m, p].

    G_y = ∇_w g_i(x_i, y_i), G_v = ∇²_ww g_i(x_i, y_i) v_i − ∇_w f_i(y_i) on the node's minibatch
    (train rows `train_idx` [m, b], validation rows `val_idx` [m, b]), G_x = −e^{x_i} ⊙ y_i ⊙ v_i.
    """
    rows = np.arange(data.nodes)[:, None]
    a_tr, b_tr = data.a_train[rows, train_idx], data.b_train[rows, train_idx]
    a_va, b_va = data.a_val[rows, val_idx], data.b_val[rows, val_idx]
    reg = np.exp(x)
    g_y = loss_gradient(a_tr, b_tr, y) + reg * y
    g_v = loss_hvp(a_tr, y, v) + reg * v - loss_gradient(a_va, b_va, y)
    g_x = -reg * y * v
    return g_y, g_v, g_x


def _stack(a: np.ndarray) -> np.ndarray:
    """All nodes' rows as one data set: [m, n, ...] → [m·n, ...]."""
    return a.reshape(-1, *a.shape[2:])


def _weighted_gram(a: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Aᵀ diag(weights_r) A for each run r: a [n, p], weights [R, n] → [R, p, p] (BLAS)."""
    return np.matmul(a.T[None] * weights[:, None, :], a)


def lower_solution(
    data: NodeData, lam: np.ndarray, w0: np.ndarray | None = None, steps: int = 30
) -> np.ndarray:
    """w*(λ) of the global lower level for each run's λ [R, p], by Newton's method from w0."""
    a, b = _stack(data.a_train), _stack(data.b_train)
    n = a.shape[0]
    reg = np.exp(lam)
    w = np.zeros_like(lam) if w0 is None else w0.copy()
    eye = np.eye(lam.shape[1])
    for _ in range(steps):
        z = w @ a.T
        grad = -(b * expit(-b * z)) @ a / n + reg * w
        s = expit(z)
        hess = _weighted_gram(a, s * (1.0 - s)) / n + reg[:, :, None] * eye
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        w = w - step
        if np.max(np.abs(step)) < 1e-12:
            break
    return w


def mean_logistic_loss(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Mean logistic loss of each run's weights w [R, p] on rows a [n, p], labels b [n]."""
    return -np.mean(log_expit(b * (w @ a.T)), axis=1)


def exact_evaluation(
    data: NodeData, lam: np.ndarray, box: tuple[float, float], w0: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """F(λ), stationarity, test accuracy and w*(λ) for each run's λ [R, p] (exact, global data).

    Stationarity (`gradnorm2`) is the squared norm of the gradient mapping of the box-constrained
    problem, ‖λ − Π_box(λ − ∇F(λ))‖², which equals ‖∇F‖² wherever no bound is active.
    """
    a_tr, a_va, b_va = _stack(data.a_train), _stack(data.a_val), _stack(data.b_val)
    w = lower_solution(data, lam, w0)
    reg = np.exp(lam)
    s = expit(w @ a_tr.T)
    hess = _weighted_gram(a_tr, s * (1.0 - s)) / a_tr.shape[0]
    hess = hess + reg[:, :, None] * np.eye(lam.shape[1])
    grad_f = -(b_va * expit(-b_va * (w @ a_va.T))) @ a_va / a_va.shape[0]
    v = np.linalg.solve(hess, grad_f[:, :, None])[:, :, 0]
    hypergrad = -reg * w * v
    accuracy = np.mean(np.sign(w @ data.a_test.T) == data.b_test, axis=1)
    return {
        "F": mean_logistic_loss(a_va, b_va, w),
        "gradnorm2": np.sum((lam - np.clip(lam - hypergrad, *box)) ** 2, axis=1),
        "accuracy": accuracy,
        "hypergradient": hypergrad,
        "w": w,
    }


def upper_objective(data: NodeData, lam: np.ndarray) -> np.ndarray:
    """F(λ) for each run's λ [R, p]."""
    w = lower_solution(data, lam)
    return mean_logistic_loss(_stack(data.a_val), _stack(data.b_val), w)
