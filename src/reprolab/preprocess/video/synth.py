"""Synthetic sprite scenes: a small physical world rendered to frames and written as real mp4.

A scene has 2-4 sprites, each with its own shape (so a shape names an object) and a colour.
Sprites move at constant velocity, bounce off the walls and collide elastically; a collision
swaps the two sprites' velocities *and their colours* (the causal event the studies ask about).
An optional occluder, a grey vertical band, hides what passes behind it.

The *symbolic state* of a frame is, per sprite, (shape, colour, cell) with the cell one of a
3 x 3 grid over the frame: coarse enough to be said in words and checked by eye, fine enough
to tell times apart. `simulate` rejects and redraws a scene until it has a collision early
enough for every question family (`SceneSpec.collision_window`) and its colours are distinct.

Two renderers: `render_frame` draws the exact continuous positions (the video), and
`render_state` draws a symbolic state with sprites at their cell centres (sprites that share a
cell spread around it by `SHARED_CELL_OFFSET`, so none hides another), moved by a random
jitter of up to `jitter` px, scaled by up to ±`scale_jitter` and over a background drawn from
its own seed, so an option image never matches a video frame pixel for pixel.

Positions and velocities are rounded to `POSITION_DECIMALS` after every step, so the JSON
annotation holds the scene exactly and a study that rebuilds it gets the same states.

Ground truth per video (`annotation`): per frame the sprites' positions, velocities, colours
and cells, the events (collisions and wall bounces with their frame) and the occluder; it is
written as JSON beside the mp4 by `write_scenes`, with a manifest CSV of the dataset.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.determinism import derive_seed
from reprolab.core.io import write_csv, write_json
from reprolab.core.progress import progress

SHAPES = ("square", "circle", "triangle", "cross")
COLOURS = {
    "red": (220, 40, 40),
    "green": (40, 190, 60),
    "blue": (50, 80, 230),
    "yellow": (230, 210, 40),
    "magenta": (210, 50, 200),
    "cyan": (40, 200, 210),
}
COLOUR_NAMES = tuple(COLOURS)
GRID = 3
CELL_NAMES = (
    "top-left",
    "top",
    "top-right",
    "left",
    "centre",
    "right",
    "bottom-left",
    "bottom",
    "bottom-right",
)
OCCLUDER_GREY = (128, 128, 128)
MAX_DRAWS = 1000
CONTACT_GAP = 1.0  # px between sprite outlines at which a collision happens
SHARED_CELL_OFFSET = 3.0  # px from the cell centre for sprites that share a cell
POSITION_DECIMALS = 4  # positions and velocities are kept rounded, so JSON holds them exactly


@dataclass(frozen=True)
class SceneSpec:
    """How scenes are drawn: frame size and count, sprites, speeds, occluder, collisions."""

    size: int = 32
    frames: int = 16
    radius: float = 3.5
    min_objects: int = 2
    max_objects: int = 4
    speed: tuple[float, float] = (1.0, 2.0)
    occluder_probability: float = 0.5
    occluder_width: int = 5
    collision_window: tuple[int, int] = (3, 11)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SceneSpec:
        """Build from a params section (every key required, as in params.yaml)."""
        return cls(
            size=int(params["size"]),
            frames=int(params["frames"]),
            radius=float(params["radius"]),
            min_objects=int(params["objects"][0]),
            max_objects=int(params["objects"][1]),
            speed=(float(params["speed"][0]), float(params["speed"][1])),
            occluder_probability=float(params["occluder_probability"]),
            occluder_width=int(params["occluder_width"]),
            collision_window=(
                int(params["collision_window"][0]),
                int(params["collision_window"][1]),
            ),
        )


@dataclass(frozen=True)
class Scene:
    """One simulated scene: per-frame positions, velocities and colour indices, and events."""

    shapes: tuple[int, ...]
    positions: np.ndarray  # [T, K, 2] float (x, y) in px
    velocities: np.ndarray  # [T, K, 2]
    colours: np.ndarray  # [T, K] int colour index
    events: tuple[dict[str, Any], ...]
    occluder: tuple[int, int] | None  # (x0, x1) of the band, or None
    background_seed: int

    @property
    def collisions(self) -> list[dict[str, Any]]:
        """The collision events, in time order."""
        return [e for e in self.events if e["kind"] == "collision"]


State = tuple[tuple[int, int, int], ...]
"""A symbolic state: per sprite (shape, colour, cell), sorted by shape."""


def cell_of(position: np.ndarray, size: int) -> int:
    """The 3 x 3 grid cell (row-major) that a position falls in."""
    col = min(GRID - 1, int(position[0] * GRID / size))
    row = min(GRID - 1, int(position[1] * GRID / size))
    return row * GRID + col


def state_at(scene: Scene, frame: int, size: int) -> State:
    """The symbolic state of `scene` at `frame`."""
    return make_state(scene.shapes, scene.colours[frame], scene.positions[frame], size)


def make_state(
    shapes: Sequence[int], colours: Sequence[int], positions: np.ndarray, size: int
) -> State:
    """A symbolic state from per-sprite shapes, colours and positions."""
    return tuple(
        sorted(
            (int(s), int(c), cell_of(p, size))
            for s, c, p in zip(shapes, colours, positions, strict=True)
        )
    )


def step(
    positions: np.ndarray,
    velocities: np.ndarray,
    colours: np.ndarray,
    spec: SceneSpec,
    collide: bool = True,
    walls: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[str, tuple[int, ...]]]]:
    """Advance one frame: move, bounce off walls, resolve collisions (swap velocity and colour).

    `collide=False` lets sprites pass through each other and `walls=False` lets them leave the
    frame; the question families use both to build counterfactual distractors.
    """
    pos = positions + velocities
    vel = velocities.copy()
    col = colours.copy()
    events: list[tuple[str, tuple[int, ...]]] = []
    low, high = spec.radius, spec.size - spec.radius
    if walls:
        for k in range(len(pos)):
            for axis in (0, 1):
                if pos[k, axis] < low:
                    pos[k, axis] = 2 * low - pos[k, axis]
                    vel[k, axis] = -vel[k, axis]
                    events.append(("bounce", (k,)))
                elif pos[k, axis] > high:
                    pos[k, axis] = 2 * high - pos[k, axis]
                    vel[k, axis] = -vel[k, axis]
                    events.append(("bounce", (k,)))
    if collide:
        for i in range(len(pos)):
            for j in range(i + 1, len(pos)):
                offset = pos[j] - pos[i]
                approaching = float(np.dot(vel[j] - vel[i], offset)) < 0
                if np.linalg.norm(offset) < 2 * spec.radius + CONTACT_GAP and approaching:
                    vel[[i, j]] = vel[[j, i]]
                    col[[i, j]] = col[[j, i]]
                    events.append(("collision", (i, j)))
    return pos, vel, col, events


def _separated_positions(rng: np.random.Generator, k: int, spec: SceneSpec) -> np.ndarray:
    """k start positions inside the walls with no two sprites touching."""
    margin = spec.radius + 1
    for _ in range(MAX_DRAWS):
        pos = rng.uniform(margin, spec.size - margin, size=(k, 2))
        gaps = np.linalg.norm(pos[:, None] - pos[None], axis=-1) + np.eye(k) * spec.size
        if gaps.min() > 2 * spec.radius + CONTACT_GAP:
            return pos
    raise RuntimeError(f"cannot place {k} separated sprites in a {spec.size}-px frame")


def _draw(rng: np.random.Generator, spec: SceneSpec) -> Scene:
    """One unconditioned draw of a scene."""
    k = int(rng.integers(spec.min_objects, spec.max_objects + 1))
    shapes = tuple(sorted(rng.choice(len(SHAPES), size=k, replace=False).tolist()))
    colours = rng.choice(len(COLOURS), size=k, replace=False)
    pos = _separated_positions(rng, k, spec)
    angle = rng.uniform(0, 2 * np.pi, size=k)
    speed = rng.uniform(*spec.speed, size=k)
    vel = np.stack([np.cos(angle), np.sin(angle)], axis=1) * speed[:, None]
    pos, vel = pos.round(POSITION_DECIMALS), vel.round(POSITION_DECIMALS)
    positions, velocities, colour_track, events = [pos], [vel], [colours], []
    for t in range(1, spec.frames):
        pos, vel, colours, new = step(pos, vel, colours, spec)
        pos, vel = pos.round(POSITION_DECIMALS), vel.round(POSITION_DECIMALS)
        positions.append(pos)
        velocities.append(vel)
        colour_track.append(colours)
        events += [{"kind": kind, "frame": t, "objects": list(objs)} for kind, objs in new]
    occluder = None
    if rng.random() < spec.occluder_probability:
        x0 = int(rng.integers(spec.size // 4, 3 * spec.size // 4 - spec.occluder_width))
        occluder = (x0, x0 + spec.occluder_width)
    return Scene(
        shapes=shapes,
        positions=np.stack(positions),
        velocities=np.stack(velocities),
        colours=np.stack(colour_track),
        events=tuple(events),
        occluder=occluder,
        background_seed=int(rng.integers(2**31)),
    )


def _usable(scene: Scene, spec: SceneSpec) -> bool:
    """A collision inside the window, no earlier one, and the state changes across it."""
    collisions = scene.collisions
    if not collisions:
        return False
    first = collisions[0]["frame"]
    lo, hi = spec.collision_window
    return lo <= first <= hi and state_at(scene, first - 1, spec.size) != state_at(
        scene, first, spec.size
    )


def simulate(seed: int, spec: SceneSpec) -> Scene:
    """Draw scenes from `seed` until one is usable (see the module docstring)."""
    rng = np.random.default_rng(seed)
    for _ in range(MAX_DRAWS):
        scene = _draw(rng, spec)
        if _usable(scene, spec):
            return scene
    raise RuntimeError(f"no usable scene in {MAX_DRAWS} draws for seed {seed}: check the spec")


def _background(seed: int, size: int) -> np.ndarray:
    """A dark, lightly textured background (float RGB)."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(20, 60, size=3)
    noise = rng.normal(0, 6, size=(size, size, 3))
    return np.clip(base + noise, 0, 255)


SUPERSAMPLE = 2
"""Sub-pixels per pixel along each axis of a sprite's soft mask."""
REACH = 1.1
"""How far every shape reaches from its centre, in radii (the widest, the triangle's base,
reaches 1.045): pixels farther away are left unpainted."""


def _pixel_span(centre: float, reach: float, size: int) -> range:
    """The pixels along one axis that a sprite reaching `reach` px from `centre` may cover
    (one pixel of margin on each side), clipped to the frame."""
    return range(max(0, math.floor(centre - reach) - 1), min(size, math.ceil(centre + reach) + 1))


def _shape_mask(
    shape: int, cx: float, cy: float, radius: float, rows: range, cols: range
) -> np.ndarray:
    """A soft (supersampled) mask of one sprite over the pixels `rows` x `cols`: the share of
    each pixel's sub-pixel centres inside the shape."""
    sub = SUPERSAMPLE
    dx = (np.arange(cols.start * sub, cols.stop * sub) + 0.5) / sub - cx
    dy = ((np.arange(rows.start * sub, rows.stop * sub) + 0.5) / sub - cy)[:, None]
    name = SHAPES[shape]
    if name == "square":
        mask = (np.abs(dx) <= radius * 0.9) & (np.abs(dy) <= radius * 0.9)
    elif name == "circle":
        mask = dx**2 + dy**2 <= radius**2
    elif name == "triangle":
        mask = (dy <= radius * 0.9) & (dy >= -radius) & (np.abs(dx) <= (dy + radius) * 0.55)
    else:
        arm = radius * 0.38
        mask = ((np.abs(dx) <= arm) & (np.abs(dy) <= radius)) | (
            (np.abs(dy) <= arm) & (np.abs(dx) <= radius)
        )
    hits = mask.reshape(len(rows), sub, len(cols), sub).sum(axis=(1, 3), dtype=np.float64)
    return hits / (sub * sub)


def _paint(image: np.ndarray, shape: int, colour: int, cx: float, cy: float, radius: float) -> None:
    """Paint one sprite onto a float image in place, alpha-blending its soft mask.

    Only the pixels within `REACH` radii of the centre are computed: everywhere else the mask
    is 0, and blending with 0 leaves a pixel as it was, so the image is the same as when the
    whole frame is blended (tested), at a fraction of the cost.
    """
    size = image.shape[0]
    rows = _pixel_span(cy, REACH * radius, size)
    cols = _pixel_span(cx, REACH * radius, size)
    if not rows or not cols:
        return
    alpha = _shape_mask(shape, cx, cy, radius, rows, cols)[..., None]
    rgb = np.asarray(COLOURS[COLOUR_NAMES[colour]], dtype=float)
    patch = image[rows.start : rows.stop, cols.start : cols.stop]
    patch *= 1 - alpha
    patch += alpha * rgb


def render_frame(scene: Scene, frame: int, spec: SceneSpec) -> np.ndarray:
    """The video frame `frame` of `scene`: uint8 [size, size, 3]."""
    image = _background(scene.background_seed, spec.size)
    for k, shape in enumerate(scene.shapes):
        cx, cy = scene.positions[frame, k]
        _paint(image, shape, int(scene.colours[frame, k]), cx, cy, spec.radius)
    if scene.occluder is not None:
        x0, x1 = scene.occluder
        image[:, x0:x1] = OCCLUDER_GREY
    return np.round(image).astype(np.uint8)


def render_video(scene: Scene, spec: SceneSpec) -> np.ndarray:
    """All frames of `scene`: uint8 [T, size, size, 3]."""
    return np.stack([render_frame(scene, t, spec) for t in range(spec.frames)])


def cell_centre(cell: int, size: int) -> tuple[float, float]:
    """The centre of a grid cell in px (x, y)."""
    row, col = divmod(cell, GRID)
    step_px = size / GRID
    return (col + 0.5) * step_px, (row + 0.5) * step_px


def render_state(
    state: State, seed: int, spec: SceneSpec, jitter: float = 1.0, scale_jitter: float = 0.1
) -> np.ndarray:
    """Draw a symbolic state (sprites at cell centres, jittered), uint8 [size, size, 3].

    With `jitter=0` and `scale_jitter=0` the drawing is the canonical one of the state.
    """
    rng = np.random.default_rng(seed)
    image = _background(int(rng.integers(2**31)), spec.size)
    cells = [cell for _, _, cell in state]
    for k, (shape, colour, cell) in enumerate(state):
        cx, cy = cell_centre(cell, spec.size)
        mates = [j for j, other in enumerate(cells) if other == cell]
        if len(mates) > 1:  # sprites sharing a cell sit apart around its centre
            angle = 2 * np.pi * mates.index(k) / len(mates) + np.pi / 4
            cx += SHARED_CELL_OFFSET * np.cos(angle)
            cy += SHARED_CELL_OFFSET * np.sin(angle)
        dx, dy = rng.uniform(-jitter, jitter, size=2)
        scale = 1 + rng.uniform(-scale_jitter, scale_jitter)
        _paint(image, shape, colour, cx + dx, cy + dy, spec.radius * scale)
    return np.round(image).astype(np.uint8)


def annotation(scene: Scene, spec: SceneSpec) -> dict[str, Any]:
    """The ground truth of a scene as JSON-able data (what `write_scenes` stores)."""
    return {
        "size": spec.size,
        "frames": spec.frames,
        "radius": spec.radius,
        "shapes": [SHAPES[s] for s in scene.shapes],
        "positions": scene.positions.tolist(),
        "velocities": scene.velocities.tolist(),
        "colours": [[COLOUR_NAMES[c] for c in row] for row in scene.colours],
        "cells": [[cell_of(p, spec.size) for p in scene.positions[t]] for t in range(spec.frames)],
        "events": list(scene.events),
        "occluder": list(scene.occluder) if scene.occluder else None,
        "background_seed": scene.background_seed,
    }


def scene_from_annotation(data: dict[str, Any]) -> Scene:
    """Rebuild the `Scene` that `annotation` described (exactly: its numbers are rounded)."""
    return Scene(
        shapes=tuple(SHAPES.index(s) for s in data["shapes"]),
        positions=np.asarray(data["positions"], dtype=float),
        velocities=np.asarray(data["velocities"], dtype=float),
        colours=np.asarray([[COLOUR_NAMES.index(c) for c in row] for row in data["colours"]]),
        events=tuple(data["events"]),
        occluder=tuple(data["occluder"]) if data["occluder"] else None,
        background_seed=int(data["background_seed"]),
    )


def video_name(index: int) -> str:
    """The file stem of video number `index` in a synthetic dataset."""
    return f"scene_{index:05d}"


def write_scenes(
    out_dir: str | Path,
    n_videos: int,
    seed: int,
    spec: SceneSpec,
    encoding: dict[str, Any],
    show_progress: bool = True,
) -> pd.DataFrame:
    """Simulate `n_videos` scenes and write videos/<name>.mp4, annotations/<name>.json and
    manifest.csv under `out_dir`; scene i is drawn from derive_seed(seed, i). Returns the manifest.

    `encoding` holds write_mp4's keyword arguments (fps, crf, gop, pix_fmt, bframes).
    """
    from reprolab.preprocess.video.encode import write_mp4

    out_dir = Path(out_dir)
    rows = []
    for index in progress(range(n_videos), "scenes", enabled=show_progress):
        name = video_name(index)
        scene = simulate(derive_seed(seed, "scene", index), spec)
        write_mp4(out_dir / "videos" / f"{name}.mp4", render_video(scene, spec), **encoding)
        write_json(out_dir / "annotations" / f"{name}.json", annotation(scene, spec))
        first = scene.collisions[0]
        rows.append(
            {
                "video": name,
                "objects": len(scene.shapes),
                "collision_frame": first["frame"],
                "collisions": len(scene.collisions),
                "occluder": scene.occluder is not None,
            }
        )
    manifest = pd.DataFrame(rows)
    write_csv(out_dir / "manifest.csv", manifest)
    return manifest
