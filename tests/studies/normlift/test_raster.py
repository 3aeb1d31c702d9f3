"""The rasteriser's weights against a brute-force per-pixel compositor, and its geometry."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.studies.normlift.raster import MAX_ALPHA, MIN_ALPHA, project, view_weights
from reprolab.studies.normlift.scenes import intrinsics, look_at

SIZE = 16


def camera() -> tuple[np.ndarray, np.ndarray]:
    """A camera at (0, -4, 1) looking at (0, 0, 1)."""
    return intrinsics(SIZE, 60.0), look_at(np.array([0.0, -4.0, 1.0]), np.array([0.0, 0.0, 1.0]))


def brute_force(means, scales, opacity, K, Rt, size, min_transmittance=1e-3):
    """{(g, p): w} by compositing every pixel on its own, in plain python."""
    out = {}
    cam = means @ Rt[:, :3].T + Rt[:, 3]
    for row in range(size):
        for col in range(size):
            hits = []
            for g, (x, y, z) in enumerate(cam):
                if z <= 0.1:
                    continue
                u, v = K[0, 0] * x / z + K[0, 2], K[1, 1] * y / z + K[1, 2]
                sigma = K[0, 0] * scales[g] / z
                d2 = (col + 0.5 - u) ** 2 + (row + 0.5 - v) ** 2
                alpha = min(MAX_ALPHA, opacity[g] * np.exp(-0.5 * d2 / sigma**2))
                if d2 <= (3 * sigma) ** 2 and alpha >= MIN_ALPHA:
                    hits.append((z, g, alpha))
            transmittance = 1.0
            for _, g, alpha in sorted(hits):
                if transmittance < min_transmittance:
                    break
                out[(g, row * size + col)] = alpha * transmittance
                transmittance *= 1 - alpha
    return out


def weights_of(means, scales, opacity, K, Rt):
    vw = view_weights(
        torch.as_tensor(means), torch.as_tensor(scales), torch.as_tensor(opacity), K, Rt, SIZE, SIZE
    )
    return {(int(g), int(p)): float(w) for g, p, w in zip(vw.g, vw.p, vw.w.detach(), strict=True)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weights_equal_brute_force_compositing(seed):
    rng = np.random.default_rng(seed)
    means = rng.uniform([-1.5, -1.0, 0.0], [1.5, 1.5, 2.0], size=(12, 3))
    scales = rng.uniform(0.05, 0.4, size=12)
    opacity = rng.uniform(0.3, 0.99, size=12)
    K, Rt = camera()
    fast, slow = (
        weights_of(means, scales, opacity, K, Rt),
        brute_force(means, scales, opacity, K, Rt, SIZE),
    )
    assert fast.keys() == slow.keys()
    assert max(abs(fast[k] - slow[k]) for k in slow) < 1e-12


def test_an_opaque_gaussian_hides_the_one_behind():
    K, Rt = camera()
    means = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])  # the second is 1 m further away
    w = weights_of(means, np.array([0.5, 0.5]), np.array([0.99, 0.99]), K, Rt)
    centre = (SIZE // 2) * SIZE + SIZE // 2
    assert w[(0, centre)] > 0.9
    assert w.get((1, centre), 0.0) < 1 - w[(0, centre)]


def test_weights_of_a_pixel_sum_to_at_most_one():
    rng = np.random.default_rng(3)
    means = rng.uniform([-1, -1, 0], [1, 1, 2], size=(40, 3))
    K, Rt = camera()
    vw = view_weights(
        torch.as_tensor(means),
        torch.full((40,), 0.3, dtype=torch.float64),
        torch.full((40,), 0.9, dtype=torch.float64),
        K,
        Rt,
        SIZE,
        SIZE,
    )
    per_pixel = np.bincount(vw.p, weights=vw.w.detach().numpy(), minlength=SIZE * SIZE)
    assert per_pixel.max() <= 1.0 + 1e-12
    assert per_pixel.max() > 0.99


def test_a_known_point_projects_onto_the_expected_pixel():
    K, Rt = camera()
    # 1 m right of and 0.5 m above the optical axis, 4 m away: u = c + f/4, v = c - f/8.
    u, v, depth = project(torch.tensor([[1.0, 0.0, 1.5]], dtype=torch.float64), K, Rt)
    f = K[0, 0]
    assert float(depth[0]) == pytest.approx(4.0)
    assert float(u[0]) == pytest.approx(SIZE / 2 + f / 4)
    assert float(v[0]) == pytest.approx(SIZE / 2 - f / 8)


def test_weights_are_differentiable_in_the_opacities():
    K, Rt = camera()
    means = torch.tensor([[0.0, 0.0, 1.0], [0.05, 0.6, 1.02]], dtype=torch.float64)
    scales = torch.tensor([0.3, 0.35], dtype=torch.float64)

    def rendered_back(opacity: torch.Tensor) -> torch.Tensor:
        vw = view_weights(means, scales, opacity, K, Rt, SIZE, SIZE)
        return vw.w[torch.as_tensor(vw.g == 1)].sum()

    opacity = torch.tensor([0.6, 0.7], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(rendered_back(opacity), opacity)
    step = 1e-6
    numeric = [
        (rendered_back(opacity.detach() + step * e) - rendered_back(opacity.detach() - step * e))
        / (2 * step)
        for e in torch.eye(2, dtype=torch.float64)
    ]
    assert grad[0] < 0  # a more opaque front Gaussian hides more of the back one
    assert torch.allclose(grad, torch.stack(numeric), rtol=1e-5, atol=1e-8)
