"""The oracle local-polynomial estimator and the classical baselines on constructed prompts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from reprolab.studies.icl_manifold import estimators
from reprolab.studies.icl_manifold.manifolds import make_prompts


def reference_log_map(z: np.ndarray, zq: np.ndarray, dim: int) -> np.ndarray:
    """Log-map coordinates at zq of unit-manifold points z, one query at a time (a reference
    for the vectorised `estimators.geodesic_coordinates`): the signed angle on a circle,
    θ · direction in a tangent basis on a sphere."""
    if dim == 1:
        cross = zq[0] * z[:, 1] - zq[1] * z[:, 0]
        return np.arctan2(cross, z[:, :2] @ zq[:2])[:, None]
    cos = np.clip(z @ zq, -1.0, 1.0)
    tangent = z - cos[:, None] * zq
    norm = np.linalg.norm(tangent, axis=1, keepdims=True)
    direction = np.divide(tangent, norm, out=np.zeros_like(tangent), where=norm > 0)
    helper = np.eye(3)[int(np.argmin(np.abs(zq)))]
    e1 = helper - (helper @ zq) * zq
    e1 /= np.linalg.norm(e1)
    return np.arccos(cos)[:, None] * (direction @ np.stack([e1, np.cross(zq, e1)], axis=1))


def quadratic_prompts(ci_params, setting, rng):
    """Prompts whose noiseless targets are a quadratic in each query's geodesic coordinates
    (one query per prompt)."""
    spec = {**ci_params["data"], **ci_params["settings"][setting], "noise": 0.0}
    p = make_prompts(spec, 60, 1, 4, rng)
    y = p.y.copy()
    for i in range(4):
        d = int(p.dims[i, p.chart[i, -1]])
        same = p.chart[i] == p.chart[i, -1]
        u = reference_log_map(p.z[i, same], p.z[i, -1], d)
        u = np.pad(u, ((0, 0), (0, 2 - d)))
        y[i, same] = 1.5 + u @ [0.7, -0.4] + 0.9 * u[:, 0] ** 2 - 0.3 * u[:, 0] * u[:, 1]
    return dataclasses.replace(p, y=y, f=y)


@pytest.mark.parametrize("setting", ["circles", "spheres", "mixture"])
def test_oracle_is_exact_on_a_quadratic_in_geodesic_coordinates(ci_params, setting):
    p = quadratic_prompts(ci_params, setting, np.random.default_rng(4))
    pred = estimators.oracle_lp(p, 2.0, 3.0, 2.0, 8, 1.0)
    assert np.allclose(pred, 1.5, atol=1e-6)


def test_local_degree_drops_with_few_points():
    w = np.zeros((1, 2, 10))
    w[0, 0, :2] = 1.0  # two effective points: degree 0
    w[0, 1, :] = 1.0  # ten: degree 2 on a circle (3 coefficients x 3 = 9 <= 10)
    active = estimators.local_degree_mask(w, np.array([[1, 1]]), 3.0)
    assert active[0, 0].tolist() == [True, False, False, False, False, False]
    assert active[0, 1].tolist() == [True, True, False, True, False, False]


def constant_prompts(ci_params, rng, value=None):
    spec = {**ci_params["data"], **ci_params["settings"]["mixture"], "noise": 0.0}
    p = make_prompts(spec, 30, 3, 5, rng)
    y = np.full_like(p.y, 2.5) if value is None else value(p.x)
    return dataclasses.replace(p, y=y, f=y)


def test_baselines_reproduce_what_they_should(ci_params):
    rng = np.random.default_rng(5)
    p = constant_prompts(ci_params, rng)
    assert np.allclose(estimators.knn(p, 3), 2.5)
    assert np.allclose(estimators.nadaraya_watson(p, 0.3), 2.5)
    coef = rng.standard_normal(p.x.shape[-1])
    affine = constant_prompts(ci_params, rng, lambda x: x @ coef - 1.0)
    truth = affine.f[:, affine.n :]
    assert np.allclose(estimators.ambient_local_linear(affine, 0.8), truth, atol=1e-5)


def test_knn_with_one_neighbour_returns_the_nearest_target(ci_params):
    p = make_prompts(
        {**ci_params["data"], **ci_params["settings"]["spheres"]},
        20,
        2,
        3,
        np.random.default_rng(6),
    )
    d = np.linalg.norm(p.x[:, 20:, None] - p.x[:, None, :20], axis=-1)
    expected = np.take_along_axis(p.y[:, :20], d.argmin(-1), axis=1)
    assert np.allclose(estimators.knn(p, 1), expected)
    assert np.allclose(estimators.squared_distances(p), d**2)


def test_geodesic_coordinates_match_the_reference_and_the_arc_length(ci_params):
    spec = {**ci_params["data"], **ci_params["settings"]["mixture"]}
    p = make_prompts(spec, 30, 3, 4, np.random.default_rng(7))
    u, same = estimators.geodesic_coordinates(p)
    for i in range(4):
        for q in range(3):
            zq = p.z[i, 30 + q]
            d = int(p.dims[i, p.chart[i, 30 + q]])
            ref = reference_log_map(p.z[i, :30][same[i, q]], zq, d)
            assert np.allclose(u[i, q][same[i, q]][:, :d], ref, atol=1e-9)
            arc = np.arccos(np.clip(p.z[i, :30][same[i, q]] @ zq, -1, 1))
            assert np.allclose(np.linalg.norm(u[i, q][same[i, q]], axis=1), arc, atol=1e-7)
