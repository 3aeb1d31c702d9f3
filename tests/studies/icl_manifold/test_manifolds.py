"""The prompt generator: geometry, targets, component counts and intrinsic coordinates."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.icl_manifold.manifolds import (
    component_count,
    harmonic_rms,
    make_prompts,
    random_target,
)


def spec(ci_params, setting):
    return {**ci_params["data"], **ci_params["settings"][setting]}


def test_points_lie_on_their_component(ci_params):
    p = make_prompts(spec(ci_params, "mixture"), 40, 3, 6, np.random.default_rng(0))
    assert p.x.shape == (6, 43, ci_params["data"]["ambient_dim"])
    for i in range(6):
        for c in range(p.dims.shape[1]):
            pts = p.x[i, p.chart[i] == c]
            if len(pts) < 5:
                continue
            # the points span exactly d + 1 ambient dimensions ...
            _, sv, vt = np.linalg.svd(pts - pts.mean(0))
            dim = int(p.dims[i, c]) + 1
            assert np.sum(sv > 1e-8 * sv[0]) == dim
            # ... and, inside that subspace, lie at the radius from one centre
            local = (pts - pts.mean(0)) @ vt[:dim].T
            a, b = 2 * (local[1:] - local[0]), (local[1:] ** 2).sum(1) - (local[0] ** 2).sum()
            centre = np.linalg.lstsq(a, b, rcond=None)[0]
            assert np.allclose(np.linalg.norm(local - centre, axis=1), p.radius[i, c], atol=1e-6)
    assert np.allclose(np.linalg.norm(p.z, axis=-1), 1.0)


def test_noise_is_the_gap_between_y_and_f(ci_params):
    s = {**spec(ci_params, "circles"), "noise": 0.0}
    p = make_prompts(s, 20, 2, 3, np.random.default_rng(1))
    assert np.array_equal(p.y, p.f)


def test_harmonic_targets_have_unit_mean_square_and_zero_laplacian(ci_params):
    rng = np.random.default_rng(2)
    s = spec(ci_params, "spheres")
    target = random_target(rng, 2, s, s["alpha"])
    a = target.frames[:, :, 0] + 1j * target.frames[:, :, 1]
    assert np.allclose((a * a).sum(1), 0.0)  # null vectors: (a·z)^ℓ is harmonic
    g = rng.standard_normal((200_000, 3))
    z = g / np.linalg.norm(g, axis=1, keepdims=True)
    for degree in (2, 3, 4):
        values = np.real((z @ a[0]) ** degree)
        assert np.sqrt(np.mean(values**2)) == pytest.approx(harmonic_rms(2, degree), rel=0.02)
    assert np.isclose(harmonic_rms(1, 3), np.sqrt(0.5))


def test_component_count_grows_with_n(ci_params):
    grow = spec(ci_params, "growing")
    assert [component_count(grow, n) for n in (16, 64, 128, 512)] == [2, 3, 4, 6]
    assert component_count(spec(ci_params, "mixture"), 512) == 2


def test_bad_kind_is_named(ci_params):
    with pytest.raises(ValueError, match="unknown manifold kinds \\['torus'\\]"):
        make_prompts(
            {**spec(ci_params, "circles"), "kinds": ["torus"]}, 8, 1, 1, np.random.default_rng(0)
        )
