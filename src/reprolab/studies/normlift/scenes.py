"""Synthetic rooms of labelled isotropic 3-D Gaussians, and the cameras that look at them.

A scene is a square room: a floor (class 0) and two walls (class 1) on adjacent sides, and
`objects` boxes and ellipsoids standing on the floor, each of one class drawn from 2..C−1.
Gaussians are sampled on the surfaces; each surface gets a share of the Gaussians (floor,
walls, objects by `surface_shares`, objects among themselves by area), and its Gaussians'
isotropic scale is a random multiple (`scale_factor`) of the mean spacing on that surface, so
every surface is covered without holes whatever its area. Opacity is uniform in `opacity`.

Cameras stand on a ring (radius and height ranges), inside the room, looking at a jittered
point near its centre; every `holdout_every`-th camera is held out (the 2-D evaluation views),
the rest are the lifting views. Choices the design card leaves open: the walls stand on the far
sides of the ring (+x and +y), so no camera sees the back of a wall; the room's half-size
(`half_size`) is larger than the ring so the walls are in view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

FLOOR, WALL = 0, 1
"""The classes of the room itself; objects take the classes 2..C−1."""


@dataclass(frozen=True)
class Gaussians:
    """Isotropic Gaussians: means [G,3] (m), scales [G] (m), opacities [G], labels [G]."""

    means: np.ndarray
    scales: np.ndarray
    opacity: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class Cameras:
    """Pinhole cameras: intrinsics K [V,3,3], world-to-camera Rt [V,3,4], image size, and
    which views are held out (held_out [V] bool)."""

    K: np.ndarray
    Rt: np.ndarray
    height: int
    width: int
    held_out: np.ndarray


def _floor(n: int, half: float, rng: np.random.Generator) -> np.ndarray:
    xy = rng.uniform(-half, half, size=(n, 2))
    return np.column_stack([xy, np.zeros(n)])


def _walls(n: int, half: float, height: float, rng: np.random.Generator) -> np.ndarray:
    """Two walls, at x = +half and y = +half, n Gaussians split evenly."""
    along = rng.uniform(-half, half, size=n)
    up = rng.uniform(0.0, height, size=n)
    on_x = np.arange(n) % 2 == 0
    x = np.where(on_x, half, along)
    y = np.where(on_x, along, half)
    return np.column_stack([x, y, up])


def _box_surface(n: int, half: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """n points uniform on the surface of an axis-aligned box of half-extents `half`."""
    a, b, c = half
    areas = np.array([b * c, b * c, a * c, a * c, a * b, a * b])
    face = rng.choice(6, size=n, p=areas / areas.sum())
    points = rng.uniform(-1.0, 1.0, size=(n, 3)) * half
    axis = face // 2
    sign = np.where(face % 2 == 0, 1.0, -1.0)
    points[np.arange(n), axis] = sign * half[axis]
    return points


def _ellipsoid_surface(n: int, half: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """n points on an ellipsoid: uniform directions scaled by the semi-axes (denser near the
    short axes than uniform-by-area, which does not matter for lifting)."""
    d = rng.normal(size=(n, 3))
    return d / np.linalg.norm(d, axis=1, keepdims=True) * half


def _box_area(half: np.ndarray) -> float:
    a, b, c = half
    return float(8 * (a * b + b * c + a * c))


def _ellipsoid_area(half: np.ndarray) -> float:
    """Knud Thomsen's approximation of an ellipsoid's surface area (within 1.1 %)."""
    p = 1.6075
    a, b, c = half
    return float(4 * np.pi * (((a * b) ** p + (a * c) ** p + (b * c) ** p) / 3) ** (1 / p))


def _objects(
    spec: Mapping[str, Any], n_classes: int, rng: np.random.Generator
) -> list[tuple[str, np.ndarray, np.ndarray, int]]:
    """(kind, centre, half-extents, class) of each object, standing on the floor inside the
    placement radius; classes drawn without replacement while there are enough."""
    count = int(spec["objects"])
    classes = rng.permutation(np.arange(2, n_classes))
    out = []
    for i in range(count):
        kind = "box" if rng.random() < 0.5 else "ellipsoid"
        half = rng.uniform(*spec["object_half_size"], size=3)
        radius = spec["placement_radius"] * np.sqrt(rng.random())
        angle = rng.uniform(0, 2 * np.pi)
        centre = np.array([radius * np.cos(angle), radius * np.sin(angle), half[2]])
        out.append((kind, centre, half, int(classes[i % len(classes)])))
    return out


def make_gaussians(spec: Mapping[str, Any], n_classes: int, rng: np.random.Generator) -> Gaussians:
    """The Gaussians of one room (`spec` is params `scene`); see the module docstring."""
    total = int(spec["gaussians"])
    shares = spec["surface_shares"]
    half, height = float(spec["half_size"]), float(spec["wall_height"])
    objects = _objects(spec, n_classes, rng)
    areas = np.array(
        [(_box_area if kind == "box" else _ellipsoid_area)(h) for kind, _, h, _ in objects]
    )
    counts = np.floor(total * shares["objects"] * areas / areas.sum()).astype(int)
    n_floor = int(total * shares["floor"])
    n_wall = total - n_floor - int(counts.sum())
    parts = [
        (_floor(n_floor, half, rng), FLOOR, (2 * half) ** 2),
        (_walls(n_wall, half, height, rng), WALL, 4 * half * height),
    ]
    for (kind, centre, h, label), n, area in zip(objects, counts, areas, strict=True):
        sample = _box_surface if kind == "box" else _ellipsoid_surface
        parts.append((centre + sample(int(n), h, rng), label, area))
    means, scales, labels = [], [], []
    for points, label, area in parts:
        spacing = np.sqrt(area / max(len(points), 1))
        means.append(points)
        scales.append(spacing * rng.uniform(*spec["scale_factor"], size=len(points)))
        labels.append(np.full(len(points), label))
    means_all = np.concatenate(means)
    return Gaussians(
        means=means_all,
        scales=np.concatenate(scales),
        opacity=rng.uniform(*spec["opacity"], size=len(means_all)),
        labels=np.concatenate(labels).astype(np.int64),
    )


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """World-to-camera [3,4] of a camera at `eye` looking at `target`, z up in the world and
    OpenCV axes in the camera (x right, y down, z forward)."""
    forward = target - eye
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.array([0.0, 0.0, 1.0]))
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    R = np.stack([right, down, forward])
    return np.column_stack([R, -R @ eye])


def intrinsics(size: int, fov_degrees: float) -> np.ndarray:
    """K of a square image of `size` pixels with horizontal field of view `fov_degrees`."""
    f = size / 2 / np.tan(np.radians(fov_degrees) / 2)
    return np.array([[f, 0.0, size / 2], [0.0, f, size / 2], [0.0, 0.0, 1.0]])


def make_cameras(spec: Mapping[str, Any], rng: np.random.Generator) -> Cameras:
    """The ring of cameras of params `cameras` (see the module docstring)."""
    n = int(spec["views"])
    size = int(spec["image_size"])
    angles = 2 * np.pi * (np.arange(n) + rng.uniform(-0.25, 0.25, size=n)) / n
    radius = rng.uniform(*spec["radius"], size=n)
    height = rng.uniform(*spec["height"], size=n)
    Rt = []
    for a, r, h in zip(angles, radius, height, strict=True):
        eye = np.array([r * np.cos(a), r * np.sin(a), h])
        target = np.append(rng.uniform(-spec["target_jitter"], spec["target_jitter"], 2), 0.5)
        Rt.append(look_at(eye, target))
    K = np.repeat(intrinsics(size, float(spec["fov_degrees"]))[None], n, axis=0)
    held_out = np.arange(n) % int(spec["holdout_every"]) == int(spec["holdout_every"]) - 1
    return Cameras(K=K, Rt=np.stack(Rt), height=size, width=size, held_out=held_out)
