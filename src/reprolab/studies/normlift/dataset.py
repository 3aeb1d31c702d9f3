"""One synthetic scene, end to end, and its HDF5 file: the input of every lifting run.

`make_scene` draws the room (scenes.make_gaussians), the cameras (scenes.make_cameras), the
α-compositing weights of every view (raster.view_weights), the ground-truth 2-D label maps
and the text embeddings and feature maps (features). A pixel's ground-truth label is the class
with the most compositing weight there; pixels whose total weight is below `min_coverage` are
background (−1), excluded from 2-D scores and drawn with the background prototype. Feature maps
are made for the lifting views only (the held-out views are scored against ground truth).

The file (`write_scene` / `read_scene`) holds `gauss/*` (means, scales, opacity, labels),
`cams/*` (K, Rt, held_out), `w/*` (g, v, p, w of every view), `feat` [V_lift, H, W, D] float16
(renormalised on reading: lifting takes unit vectors), `gt2d` [V, H, W] int16 and `text` [C, D].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reprolab.core.io import write_h5
from reprolab.studies.normlift import features as feat
from reprolab.studies.normlift.lifting import Weights, normalise
from reprolab.studies.normlift.raster import view_weights
from reprolab.studies.normlift.scenes import Cameras, Gaussians, make_cameras, make_gaussians


@dataclass(frozen=True, eq=False)
class Scene:
    """A scene ready for lifting: `weights` of every view, `features` [V_lift, H·W, D] of the
    lifting views (cameras.held_out False, in view order), `gt2d` [V, H·W] (−1 = background),
    `text` [C, D]."""

    gaussians: Gaussians
    cameras: Cameras
    weights: Weights
    features: np.ndarray
    gt2d: np.ndarray
    text: np.ndarray

    @property
    def n_classes(self) -> int:
        return len(self.text)


def select_views(weights: Weights, views: np.ndarray) -> Weights:
    """The weights of the listed views only, renumbered 0..len(views)−1 in the given order."""
    renumber = np.full(weights.n_views, -1)
    renumber[views] = np.arange(len(views))
    keep = renumber[weights.v] >= 0
    return Weights(
        g=weights.g[keep],
        v=renumber[weights.v[keep]],
        p=weights.p[keep],
        w=weights.w[keep],
        n_gaussians=weights.n_gaussians,
        n_views=len(views),
        n_pixels=weights.n_pixels,
    )


def lifting_views(scene: Scene) -> np.ndarray:
    """Indices of the lifting views."""
    return np.flatnonzero(~scene.cameras.held_out)


def held_out_views(scene: Scene) -> np.ndarray:
    """Indices of the held-out (2-D evaluation) views."""
    return np.flatnonzero(scene.cameras.held_out)


def all_view_weights(gaussians: Gaussians, cameras: Cameras) -> Weights:
    """The compositing weights of every view as one sparse list."""
    means, scales, opacity = (
        torch.as_tensor(x) for x in (gaussians.means, gaussians.scales, gaussians.opacity)
    )
    gs, vs, ps, ws = [], [], [], []
    with torch.no_grad():
        for v in range(len(cameras.K)):
            view = view_weights(
                means, scales, opacity, cameras.K[v], cameras.Rt[v], cameras.height, cameras.width
            )
            gs.append(view.g)
            vs.append(np.full(len(view.g), v))
            ps.append(view.p)
            ws.append(view.w.numpy())
    return Weights(
        g=np.concatenate(gs),
        v=np.concatenate(vs),
        p=np.concatenate(ps),
        w=np.concatenate(ws),
        n_gaussians=len(gaussians.means),
        n_views=len(cameras.K),
        n_pixels=cameras.height * cameras.width,
    )


def ground_truth(
    weights: Weights, labels: np.ndarray, n_classes: int, min_coverage: float
) -> np.ndarray:
    """[V, P] ground-truth labels: per pixel the class with the most weight, −1 where the
    total weight is below `min_coverage`."""
    flat = (weights.v * weights.n_pixels + weights.p) * n_classes + labels[weights.g]
    mass = np.bincount(
        flat, weights=weights.w, minlength=weights.n_views * weights.n_pixels * n_classes
    )
    mass = mass.reshape(weights.n_views, weights.n_pixels, n_classes)
    return np.where(mass.sum(axis=2) >= min_coverage, mass.argmax(axis=2), -1)


def make_scene(data: Mapping[str, Any], rng: np.random.Generator) -> Scene:
    """The scene of params `normlift.data` (sections scene, cameras, features) from `rng`."""
    n_classes = int(data["classes"])
    gaussians = make_gaussians(data["scene"], n_classes, rng)
    cameras = make_cameras(data["cameras"], rng)
    weights = all_view_weights(gaussians, cameras)
    gt2d = ground_truth(weights, gaussians.labels, n_classes, float(data["min_coverage"]))
    spec = data["features"]
    text = feat.text_embeddings(n_classes, int(spec["dim"]), float(spec["text_spread"]), rng)
    protos = feat.prototypes(text, float(spec["gap"]), rng)
    size = cameras.height
    maps = [
        feat.feature_map(gt2d[v].reshape(size, size), protos, spec, rng).reshape(size * size, -1)
        for v in np.flatnonzero(~cameras.held_out)
    ]
    return Scene(gaussians, cameras, weights, np.stack(maps), gt2d, text)


SCENE_DATASETS = (
    "gauss/means",
    "gauss/scales",
    "gauss/opacity",
    "gauss/labels",
    "cams/K",
    "cams/Rt",
    "cams/held_out",
    "w/g",
    "w/v",
    "w/p",
    "w/w",
    "feat",
    "gt2d",
    "text",
)
"""The datasets of a scene file (module docstring)."""


def write_scene(path: str | Path, scene: Scene) -> None:
    """The scene's HDF5 file (module docstring), atomically and without timestamps."""
    g, c, w = scene.gaussians, scene.cameras, scene.weights
    write_h5(
        path,
        {
            "gauss/means": g.means,
            "gauss/scales": g.scales,
            "gauss/opacity": g.opacity,
            "gauss/labels": g.labels,
            "cams/K": c.K,
            "cams/Rt": c.Rt,
            "cams/held_out": c.held_out,
            "w/g": w.g.astype(np.int32),
            "w/v": w.v.astype(np.int16),
            "w/p": w.p.astype(np.int32),
            "w/w": w.w,
            "feat": scene.features.reshape(len(scene.features), c.height, c.width, -1).astype(
                np.float16
            ),
            "gt2d": scene.gt2d.reshape(-1, c.height, c.width).astype(np.int16),
            "text": scene.text,
        },
    )


def read_scene(path: str | Path) -> Scene:
    """The scene written by `write_scene`; features are renormalised to unit length (they are
    stored as float16). A missing dataset is named with the file."""
    import h5py

    with h5py.File(path, "r") as handle:
        try:
            arrays = {name: handle[name][()] for name in SCENE_DATASETS}
        except KeyError as exc:
            raise ValueError(f"{path}: not a normlift scene file ({exc})") from exc
    labels2d = arrays["gt2d"].astype(np.int64)
    views, height, width = labels2d.shape
    held_out = arrays["cams/held_out"].astype(bool)
    feature_maps = arrays["feat"].astype(np.float64)
    return Scene(
        gaussians=Gaussians(
            arrays["gauss/means"],
            arrays["gauss/scales"],
            arrays["gauss/opacity"],
            arrays["gauss/labels"].astype(np.int64),
        ),
        cameras=Cameras(arrays["cams/K"], arrays["cams/Rt"], height, width, held_out),
        weights=Weights(
            g=arrays["w/g"],
            v=arrays["w/v"],
            p=arrays["w/p"],
            w=arrays["w/w"],
            n_gaussians=len(arrays["gauss/labels"]),
            n_views=views,
            n_pixels=height * width,
        ),
        features=normalise(feature_maps.reshape(len(feature_maps), height * width, -1)),
        gt2d=labels2d.reshape(views, height * width),
        text=arrays["text"],
    )
