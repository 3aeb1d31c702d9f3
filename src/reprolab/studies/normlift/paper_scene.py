"""A real scene folder as a normlift `Scene` (paper scale): trained 3DGS splats, their COLMAP
cameras, per-pixel CLIP-like feature maps, text embeddings and ScanNet's labelled mesh, turned into
the same `Scene` that `dataset.make_scene` draws at smoke scale, so lifting, scoring and the scene
file work unchanged.

The folder (the contract a user prepares: 3DGS training, e.g. gsplat, and a per-pixel feature
extractor such as OpenSeg or LSeg run beforehand)::

    <scene>/
      point_cloud.ply            3DGS output (formats.read_gaussian_ply)
      sparse/0/                  COLMAP model of the undistorted images (formats.read_colmap)
      features/<image stem>.npy  [h, w, D] per-pixel features of each image (float16 or float32),
                                 any resolution h × w with the image's aspect ratio
      text.npy                   [C, D] text embeddings of the protocol's class names (same encoder)
      labels.ply                 mesh vertices with a ``label`` property (ScanNet's
                                 ``<scene>_vh_clean_2.labels.ply`` renamed, NYU40 ids)

``<image stem>`` is the COLMAP image name's file name without its suffix (``frame_0001.jpg`` →
``features/frame_0001.npy``). `scene_from_folder` takes the spec keys `protocol_ids` (NYU40 ids;
class c is ``protocol_ids[c]``, text row c), `label_distance` (m), `holdout_every`,
`min_coverage` and `max_views`.

Choices.

* Views: the cameras in image-name order; at most `max_views` of them, at the indices
  ``round(linspace(0, n − 1, min(n, max_views)))`` (evenly spaced, first and last kept). Of the
  views used, view i is held out when ``i % holdout_every == holdout_every − 1`` (as
  `scenes.make_cameras`); only the lifting views need a features file.
* Resolution: every view is rasterised at the feature maps' resolution, which all files share
  (`Cameras` has one size); K is scaled from the COLMAP image size, fx and cx by w / width, fy and
  cy by h / height (COLMAP's pixel centres at +0.5, as the rasteriser's). A view whose image
  aspect ratio the features do not keep (to within one pixel) is an error.
* Gaussians: the rasteriser splats isotropic Gaussians, so each Gaussian's scale is the geometric
  mean of its three scales and its rotation is ignored; opacity is used as read (the sigmoid is
  already applied). The rasteriser sizes a footprint by fx only, so fy ≠ fx is approximated too.
* Features: cast to float64 and normalised to unit length (`lifting.normalise`; zero vectors stay
  zero), [V_lift, h·w, D] row-major, held in memory as `Scene` holds them (V_lift·h·w·D·8
  bytes, which `max_views` and the feature resolution bound); the text embeddings are
  normalised the same way.
* Labels: each mesh vertex's NYU40 id becomes its protocol class (`formats.scannet_class_index`,
  −1 for other ids) and each Gaussian takes the class of the nearest vertex within
  `label_distance` (`formats.transfer_labels`), −1 (unlabelled: a floater, or the nearest vertex
  is unannotated or outside the protocol) otherwise. ``Scene.gaussians.labels`` keeps the −1s;
  the study's metrics drop truth < 0 (`metrics.confusion`).
* Ground-truth 2-D maps: `dataset.ground_truth` of the compositing weights of the labelled
  Gaussians only (their weights as composited behind every Gaussian, unlabelled ones included),
  so a pixel covered mostly by unlabelled Gaussians is background (−1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.studies.normlift.dataset import Scene, all_view_weights, ground_truth
from reprolab.studies.normlift.formats import (
    Camera,
    read_colmap,
    read_gaussian_ply,
    read_scannet_labels,
    scannet_class_index,
    transfer_labels,
)
from reprolab.studies.normlift.lifting import Weights, normalise
from reprolab.studies.normlift.scenes import Cameras, Gaussians

FOLDER_PARTS = {
    "point_cloud.ply": "the 3DGS Gaussians",
    "sparse/0": "the COLMAP model of the undistorted images",
    "features": "the per-pixel feature maps, <image stem>.npy",
    "text.npy": "the [C, D] text embeddings",
    "labels.ply": "the labelled mesh (ScanNet's _vh_clean_2.labels.ply)",
}
"""The parts of a scene folder (module docstring) and what each holds."""


def _check_folder(folder: Path) -> None:
    """FileNotFoundError naming every missing part of the scene folder and what it should hold."""
    missing = [
        f"{folder / part} ({what})"
        for part, what in FOLDER_PARTS.items()
        if not (folder / part).exists()
    ]
    if missing:
        raise FileNotFoundError(
            f"{folder}: not a complete normlift scene folder; missing: {'; '.join(missing)}"
        )


def _load_array(path: Path, what: str) -> np.ndarray:
    """The array of a ``.npy`` file; ValueError naming the file and `what` it should hold when
    it is missing or not an array."""
    if not path.is_file():
        raise ValueError(f"{path}: no such file ({what} was expected)")
    try:
        return np.load(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a .npy array ({what} was expected; {exc})") from exc


def _chosen_views(n: int, max_views: int) -> np.ndarray:
    """The indices of at most `max_views` of `n` views, evenly spaced (first and last kept);
    distinct because the spacing is at least one."""
    if max_views < 1:
        raise ValueError(f"max_views must be >= 1, found {max_views}")
    return np.round(np.linspace(0, n - 1, min(n, max_views))).astype(np.int64)


def _views(model: Path, max_views: int, holdout_every: int) -> tuple[list[Camera], np.ndarray]:
    """The cameras used (`_chosen_views` of the model's, in name order) and which are held out
    (every `holdout_every`-th, as `scenes.make_cameras`); ValueError naming the model when it
    holds no image or no lifting view is left."""
    every = read_colmap(model)
    if not every:
        raise ValueError(f"{model}: the COLMAP model holds no registered image")
    if holdout_every < 1:
        raise ValueError(f"holdout_every must be >= 1, found {holdout_every}")
    chosen = [every[i] for i in _chosen_views(len(every), max_views)]
    held_out = np.arange(len(chosen)) % holdout_every == holdout_every - 1
    if held_out.all():
        raise ValueError(
            f"{model}: holdout_every={holdout_every} holds out all {len(chosen)} views used; "
            "lifting needs at least one view"
        )
    return chosen, held_out


def _load_text(path: Path, n_classes: int) -> np.ndarray:
    """The unit text embeddings [C, D] float64; ValueError naming the file unless C is the
    protocol's number of classes."""
    text = _load_array(path, f"[{n_classes}, D] text embeddings")
    if text.ndim != 2 or len(text) != n_classes:
        raise ValueError(
            f"{path}: expected [{n_classes}, D] text embeddings (one row per protocol id), found "
            f"shape {text.shape}"
        )
    return normalise(text.astype(np.float64))


def _features_path(folder: Path, camera: Camera) -> Path:
    """The features file of a camera: its image name's stem with ``.npy`` in `folder`."""
    return folder / f"{Path(camera.name).stem}.npy"


def _load_features(
    folder: Path, cameras: Sequence[Camera], text_path: Path, dim: int
) -> tuple[np.ndarray, int, int]:
    """The unit feature maps [V, h·w, D] float64 of `cameras` and their shared (h, w), filled
    into one array as the files are read; ValueError naming the file for a malformed file, a
    resolution other than the first file's, or a D other than the text embeddings'."""
    first = _features_path(folder, cameras[0])
    maps, height, width = None, 0, 0
    for i, camera in enumerate(cameras):
        path = _features_path(folder, camera)
        values = _load_array(path, f"the [h, w, D] features of image {camera.name!r}")
        if values.ndim != 3 or values.dtype.kind != "f":
            raise ValueError(
                f"{path}: expected [h, w, D] float features of image {camera.name!r}, found "
                f"{values.dtype} of shape {values.shape}"
            )
        if values.shape[2] != dim:
            raise ValueError(
                f"{path}: features of dimension {values.shape[2]}, but the text embeddings of "
                f"{text_path} have dimension {dim} (both must come from the same encoder)"
            )
        if maps is None:
            height, width = values.shape[:2]
            maps = np.empty((len(cameras), height * width, dim))
        elif values.shape[:2] != (height, width):
            raise ValueError(
                f"{path}: features of {values.shape[1]}×{values.shape[0]} pixels (w×h), but "
                f"{first} has {width}×{height}; all feature maps must share one resolution"
            )
        maps[i] = normalise(values.reshape(-1, dim).astype(np.float64))
    return maps, height, width


def _scaled_intrinsics(
    camera: Camera, height: int, width: int, model: Path, features: Path
) -> np.ndarray:
    """The camera's K at `width` × `height` pixels (fx, cx by width / camera.width; fy, cy by
    height / camera.height); ValueError naming the model, the image and the features file when
    that size does not keep the image's aspect ratio to within one pixel."""
    if abs(height - width * camera.height / camera.width) > 1.0:
        raise ValueError(
            f"{model}: image {camera.name!r} is {camera.width}×{camera.height} pixels (w×h), "
            f"whose aspect ratio the feature maps' {width}×{height} ({features}) do not keep"
        )
    scale = np.array([[width / camera.width], [height / camera.height], [1.0]])
    return camera.K * scale


def _gaussian_labels(
    path: Path, protocol_ids: Sequence[int], means: np.ndarray, max_distance: float
) -> np.ndarray:
    """Per Gaussian the protocol class of the nearest mesh vertex within `max_distance`, −1
    otherwise (module docstring)."""
    points, nyu40 = read_scannet_labels(path)
    classes = scannet_class_index(nyu40, protocol_ids)
    return transfer_labels(points, classes, means, max_distance)


def _labelled_ground_truth(
    weights: Weights, labels: np.ndarray, n_classes: int, min_coverage: float
) -> np.ndarray:
    """`dataset.ground_truth` of the weights of the labelled Gaussians only (label ≥ 0), so no
    −1 label reaches it."""
    keep = labels[weights.g] >= 0
    labelled = Weights(
        g=weights.g[keep],
        v=weights.v[keep],
        p=weights.p[keep],
        w=weights.w[keep],
        n_gaussians=weights.n_gaussians,
        n_views=weights.n_views,
        n_pixels=weights.n_pixels,
    )
    return ground_truth(labelled, labels, n_classes, min_coverage)


def scene_from_folder(folder: str | Path, spec: Mapping[str, Any]) -> Scene:
    """The `Scene` of a real scene folder (module docstring: layout, spec keys and choices).

    FileNotFoundError names every missing part of the folder; ValueError names the file for a
    missing features file of a lifting view, malformed input, feature maps of different
    resolutions or of another dimension than the text embeddings, and a protocol whose class
    count differs from the text embeddings'."""
    folder = Path(folder)
    _check_folder(folder)
    model = folder / "sparse" / "0"
    chosen, held_out = _views(model, int(spec["max_views"]), int(spec["holdout_every"]))
    lifting = [camera for camera, out in zip(chosen, held_out, strict=True) if not out]
    protocol_ids = [int(i) for i in spec["protocol_ids"]]
    text = _load_text(folder / "text.npy", len(protocol_ids))
    features, height, width = _load_features(
        folder / "features", lifting, folder / "text.npy", text.shape[1]
    )
    first = _features_path(folder / "features", lifting[0])
    cameras = Cameras(
        K=np.stack([_scaled_intrinsics(c, height, width, model, first) for c in chosen]),
        Rt=np.stack([camera.Rt for camera in chosen]),
        height=height,
        width=width,
        held_out=held_out,
    )
    splats = read_gaussian_ply(folder / "point_cloud.ply")
    labels = _gaussian_labels(
        folder / "labels.ply", protocol_ids, splats.means, float(spec["label_distance"])
    )
    gaussians = Gaussians(
        means=splats.means,
        scales=np.cbrt(np.prod(splats.scales, axis=1)),
        opacity=splats.opacity,
        labels=labels,
    )
    weights = all_view_weights(gaussians, cameras)
    gt2d = _labelled_ground_truth(weights, labels, len(text), float(spec["min_coverage"]))
    return Scene(gaussians, cameras, weights, features, gt2d, text)
