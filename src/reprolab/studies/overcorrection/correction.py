"""The linear-attention readout theory of how external information corrects an answer vector.

A linear-attention model with a prior W₀ (p × d) answers a query with in-context items S as

    ŷ(S) = ŷ(∅) + Δ(S),   Δ(S) = Σ_{k∈S} a_k r_k,   a_k = η ⟨key_k, query⟩,   r_k = y_k − W₀ x_k,

with ŷ(∅) = W₀ x_q the answer without information. In the toy the keys are the items' x_k and the
query is x_q; for a trained model they are the model's keys and query at the readout layer, so
every function here takes (keys, query, residual values, η) rather than the raw x. With noiseless
items (y_k = W* x_k) the correction has the closed form Δ(S) = −(W₀ − W*)(η Σ_S x_k x_kᵀ) x_q, and
the error e(S) = ŷ(S) − y* = (W₀ − W*)(I − η Σ_S x_k x_kᵀ) x_q.

Overshoot: κ = ⟨Δ, −e₀⟩ / ‖e₀‖², the share of the no-information error e₀ that the correction
removes along e₀'s direction (κ = 1 removes it exactly; κ > 1 goes past it; κ < 0 adds to it).
A correction is labelled over-correcting for κ > `upper`, under-correcting for κ < `lower` and
proper otherwise (the design card's 1.5 and 0.5 by default).
"""

from __future__ import annotations

import numpy as np

LABELS = ("under", "proper", "over")


def attention_weights(keys: np.ndarray, query: np.ndarray, eta: float) -> np.ndarray:
    """The linear-attention weights a_k = η ⟨key_k, query⟩ of (n, d) keys, (n,)."""
    return eta * (keys @ query)


def residual_values(x: np.ndarray, y: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """The items' residuals r_k = y_k − W₀ x_k, (n, p), from (n, d) inputs, (n, p) answers and the
    (p, d) prior: what each item says the prior gets wrong."""
    return y - x @ prior.T


def correction(keys: np.ndarray, query: np.ndarray, values: np.ndarray, eta: float) -> np.ndarray:
    """The correction Δ = Σ_k a_k r_k of the items with these keys and residual values, (p,); an
    empty item set ((0, d) keys, (0, p) values) gives zero."""
    return attention_weights(keys, query, eta) @ values


def readout(
    baseline: np.ndarray, keys: np.ndarray, query: np.ndarray, values: np.ndarray, eta: float
) -> np.ndarray:
    """The answer ŷ(S) = ŷ(∅) + Δ(S), with `baseline` the answer without information (W₀ x_q in
    the toy, the model's own answer for a trained model)."""
    return baseline + correction(keys, query, values, eta)


def closed_form_correction(
    prior: np.ndarray, truth: np.ndarray, x: np.ndarray, x_query: np.ndarray, eta: float
) -> np.ndarray:
    """The noiseless toy's Δ(S) = −(W₀ − W*)(η Σ_S x_k x_kᵀ) x_q for the items' (n, d) inputs x,
    computed from the two maps alone (no answers), (p,)."""
    return -(prior - truth) @ (eta * (x.T @ (x @ x_query)))


def error(prediction: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The answer's error e = ŷ − y*."""
    return prediction - target


def overshoot(delta: np.ndarray, error0: np.ndarray) -> float:
    """κ = ⟨Δ, −e₀⟩ / ‖e₀‖² (module docstring); nan where there is no error to correct (e₀ = 0)."""
    scale = float(error0 @ error0)
    if scale == 0.0:
        return float("nan")
    return float(-(delta @ error0)) / scale


def correction_label(kappa: float, lower: float = 0.5, upper: float = 1.5) -> str:
    """ "over" for κ > upper, "under" for κ < lower, "proper" otherwise (both bounds count as
    proper); a nan κ (no error to correct) has no label and raises."""
    if lower > upper:
        raise ValueError(f"correction labels need lower <= upper, got {lower} > {upper}")
    if np.isnan(kappa):
        raise ValueError("a nan overshoot (no error to correct) has no correction label")
    if kappa > upper:
        return "over"
    if kappa < lower:
        return "under"
    return "proper"


def label_rates(kappas: np.ndarray, lower: float = 0.5, upper: float = 1.5) -> dict[str, float]:
    """The share of each label ("under", "proper", "over") among these overshoots."""
    labels = [correction_label(float(kappa), lower, upper) for kappa in np.ravel(kappas)]
    if not labels:
        raise ValueError("label rates need at least one overshoot")
    return {label: labels.count(label) / len(labels) for label in LABELS}


def r_squared(predicted: np.ndarray, measured: np.ndarray) -> float:
    """R² of predicted against measured corrections, given as (queries, p) arrays.

    Pooled: every (query, coordinate) pair is one observation and the total sum of squares is
    taken around the measured corrections' grand mean (not per coordinate), so R² = 1 − Σ(Δ −
    Δ̂)² / Σ(Δ − mean Δ)²: 1 for a perfect prediction, at most 0 for any constant one. nan where
    the measured corrections do not vary.
    """
    if np.shape(measured) != np.shape(predicted):
        raise ValueError(
            f"R² needs matching shapes, got {np.shape(predicted)}, {np.shape(measured)}"
        )
    measured, predicted = np.ravel(measured), np.ravel(predicted)
    total = float(((measured - measured.mean()) ** 2).sum())
    if total == 0.0:
        return float("nan")
    return 1.0 - float(((measured - predicted) ** 2).sum()) / total


def head_scores(keys: np.ndarray, query: np.ndarray, heads: int) -> np.ndarray:
    """Each head's key–query inner product ⟨key_k^h, query^h⟩ of (..., n, m) keys and a (..., m)
    query, (..., n, heads). The width m splits into `heads` contiguous blocks of m / heads (the
    layout of GPT-2's heads); one head gives keys @ query."""
    width = query.shape[-1]
    if width % heads:
        raise ValueError(f"a width of {width} does not split into {heads} heads")
    split_keys = keys.reshape(*keys.shape[:-1], heads, width // heads)
    split_query = query.reshape(*query.shape[:-1], heads, width // heads)
    return np.einsum("...nhw,...hw->...nh", split_keys, split_query)


def head_attention_weights(keys: np.ndarray, query: np.ndarray, etas: np.ndarray) -> np.ndarray:
    """The multi-head linear-attention weights a_k = Σ_h η_h ⟨key_k^h, query^h⟩, (..., n), one η
    per head (as many heads as etas); with one head this is `attention_weights`."""
    etas = np.atleast_1d(etas)
    return head_scores(keys, query, len(etas)) @ etas
