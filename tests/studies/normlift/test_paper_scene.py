"""A real-format scene folder as a normlift Scene: a tiny 3DGS ``point_cloud.ply`` (30 Gaussians
on a grid), a COLMAP text model of five 32 × 32 PINHOLE cameras, 16 × 16 feature maps, text
embeddings and an ascii labels mesh. Checked: the views chosen and held out, K scaled to the
feature resolution, unit features, the isotropic scales, the labels transferred (a Gaussian far
from the mesh and one on an unannotated vertex unlabelled), the ground-truth maps of the labelled
Gaussians only, the scene file round trip, and every bad input named in its error."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation
from scipy.special import expit

from reprolab.studies.normlift.dataset import ground_truth, read_scene, write_scene
from reprolab.studies.normlift.lifting import Weights, normalise
from reprolab.studies.normlift.paper_scene import scene_from_folder
from reprolab.studies.normlift.scenes import look_at
from tests.studies.normlift.test_formats import GAUSSIAN_FIELDS, write_colmap_txt, write_ply

torch.set_num_threads(1)

GRID = np.array([(x, y, 0.0) for x in np.linspace(-1, 1, 6) for y in np.linspace(-0.8, 0.8, 5)])
SCALES = (0.075, 0.15, 0.3)  # geometric mean 0.15
NYU40 = (1, 2, 5, 0)  # the labels of the mesh vertices, cycled; 0 is ScanNet's unannotated
SPEC = {
    "protocol_ids": [2, 5, 1],  # NYU40 2 → class 0, 5 → 1, 1 → 2, anything else → −1
    "label_distance": 0.05,
    "holdout_every": 2,
    "min_coverage": 0.5,
    "max_views": 4,
}
NAMES = [f"frame_{i}.jpg" for i in range(5)]
USED = [0, 1, 3, 4]  # round(linspace(0, 4, 4)) = round([0, 1.33, 2.67, 4])
PINHOLE = [30.0, 28.0, 16.0, 15.5]  # fx, fy, cx, cy of 32 × 32 images


def poses() -> list[np.ndarray]:
    """World-to-camera [3, 4] of five cameras on a ring looking at the grid's centre."""
    angles = 2 * np.pi * np.arange(5) / 5
    eyes = [np.array([3 * np.cos(a), 3 * np.sin(a), 2.0]) for a in angles]
    return [look_at(eye, np.zeros(3)) for eye in eyes]


def colmap_qvec(R: np.ndarray) -> list[float]:
    """COLMAP's (w, x, y, z) quaternion of a rotation matrix (scipy gives x, y, z, w)."""
    x, y, z, w = Rotation.from_matrix(R).as_quat().tolist()
    return [w, x, y, z]


def expected_labels() -> np.ndarray:
    """The class of each Gaussian: its vertex's NYU40 id mapped by SPEC, −1 for the last one
    (no vertex within label_distance)."""
    mapped = {2: 0, 5: 1, 1: 2, 0: -1}
    return np.array([mapped[NYU40[i % 4]] for i in range(len(GRID) - 1)] + [-1])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A complete scene folder in the real formats (module docstring)."""
    splats = np.zeros(len(GRID), dtype=[(name, "f4") for name in GAUSSIAN_FIELDS])
    for axis, name in enumerate("xyz"):
        splats[name] = GRID[:, axis]
    for axis, scale in enumerate(SCALES):
        splats[f"scale_{axis}"] = np.log(scale)
    splats["opacity"], splats["rot_0"] = 2.0, 1.0
    write_ply(tmp_path / "point_cloud.ply", "binary_little_endian", splats)
    images = [
        (i + 1, colmap_qvec(Rt[:, :3]), Rt[:, 3].tolist(), 1, NAMES[i], [])
        for i, Rt in enumerate(poses())
    ]
    write_colmap_txt(tmp_path / "sparse" / "0", [(1, 1, 32, 32, PINHOLE)], images[::-1])
    rng = np.random.default_rng(0)
    (tmp_path / "features").mkdir()
    for i, name in enumerate(NAMES):
        values = rng.normal(size=(16, 16, 4)).astype(np.float16 if i % 2 else np.float32)
        np.save(tmp_path / "features" / f"{Path(name).stem}.npy", values)
    np.save(tmp_path / "text.npy", rng.normal(size=(3, 4)))
    vertices = np.zeros(len(GRID), dtype=[("x", "f4"), ("y", "f4"), ("z", "f4"), ("label", "u2")])
    for axis, name in enumerate("xyz"):
        vertices[name][:-1] = GRID[:-1, axis] + 0.01
    vertices["label"][:-1] = [NYU40[i % 4] for i in range(len(GRID) - 1)]
    vertices[-1] = (5.0, 5.0, 5.0, 2)  # far from every Gaussian
    write_ply(tmp_path / "labels.ply", "ascii", vertices)
    return tmp_path


def test_views_intrinsics_features_and_gaussians(folder: Path) -> None:
    scene = scene_from_folder(folder, SPEC)
    cameras = scene.cameras
    assert (cameras.height, cameras.width) == (16, 16)
    assert cameras.held_out.tolist() == [False, True, False, True]
    np.testing.assert_allclose(cameras.Rt, np.stack([poses()[i] for i in USED]), atol=1e-12)
    k = [[15.0, 0.0, 8.0], [0.0, 14.0, 7.75], [0.0, 0.0, 1.0]]
    np.testing.assert_array_equal(cameras.K, np.stack([k] * 4))
    assert scene.features.shape == (2, 256, 4)
    for row, name in zip(scene.features, ["frame_0", "frame_3"], strict=True):
        loaded = np.load(folder / "features" / f"{name}.npy").astype(np.float64)
        np.testing.assert_allclose(row, normalise(loaded.reshape(256, 4)))
    np.testing.assert_allclose(np.linalg.norm(scene.features, axis=2), 1.0)
    np.testing.assert_allclose(np.linalg.norm(scene.text, axis=1), 1.0)
    assert scene.n_classes == 3
    np.testing.assert_allclose(scene.gaussians.means, GRID, atol=1e-7)
    np.testing.assert_allclose(scene.gaussians.scales, 0.15, rtol=1e-6)
    np.testing.assert_allclose(scene.gaussians.opacity, expit(2.0))
    weights = scene.weights
    assert (weights.n_gaussians, weights.n_views, weights.n_pixels) == (30, 4, 256)
    assert (np.bincount(weights.v, minlength=4) > 0).all()  # every camera sees the grid


def test_labels_and_ground_truth_of_the_labelled_gaussians(folder: Path) -> None:
    scene = scene_from_folder(folder, SPEC)
    labels = scene.gaussians.labels
    np.testing.assert_array_equal(labels, expected_labels())
    w = scene.weights
    keep = labels[w.g] >= 0
    labelled = Weights(w.g[keep], w.v[keep], w.p[keep], w.w[keep], 30, 4, 256)
    np.testing.assert_array_equal(scene.gt2d, ground_truth(labelled, labels, 3, 0.5))
    assert scene.gt2d.shape == (4, 256)
    assert set(np.unique(scene.gt2d)) == {-1, 0, 1, 2}


def test_the_scene_file_round_trips(folder: Path, tmp_path: Path) -> None:
    scene = scene_from_folder(folder, SPEC)
    write_scene(tmp_path / "scene.h5", scene)
    back = read_scene(tmp_path / "scene.h5")
    np.testing.assert_array_equal(back.gaussians.labels, scene.gaussians.labels)
    np.testing.assert_array_equal(back.gaussians.scales, scene.gaussians.scales)
    np.testing.assert_array_equal(back.cameras.K, scene.cameras.K)
    np.testing.assert_array_equal(back.cameras.held_out, scene.cameras.held_out)
    np.testing.assert_array_equal(back.weights.g, scene.weights.g)
    np.testing.assert_array_equal(back.weights.w, scene.weights.w)
    np.testing.assert_array_equal(back.gt2d, scene.gt2d)
    np.testing.assert_allclose(back.features, scene.features, atol=2e-3)
    np.testing.assert_array_equal(back.text, scene.text)


def test_held_out_views_need_no_features(folder: Path) -> None:
    for name in ("frame_1", "frame_4", "frame_2"):  # held out, held out, not used
        (folder / "features" / f"{name}.npy").unlink()
    assert scene_from_folder(folder, SPEC).features.shape == (2, 256, 4)


def test_missing_features_file_is_named(folder: Path) -> None:
    path = folder / "features" / "frame_3.npy"
    path.unlink()
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: no such file"):
        scene_from_folder(folder, SPEC)


def test_resolution_mismatch_is_named(folder: Path) -> None:
    path = folder / "features" / "frame_3.npy"
    np.save(path, np.ones((8, 8, 4), np.float32))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: .*8×8.*frame_0\.npy has 16×16"):
        scene_from_folder(folder, SPEC)


def test_aspect_ratio_mismatch_is_named(folder: Path) -> None:
    for name in ("frame_0", "frame_3"):
        np.save(folder / "features" / f"{name}.npy", np.ones((16, 12, 4), np.float32))
    with pytest.raises(ValueError, match=r"'frame_0\.jpg' is 32×32 .*12×16 .*frame_0\.npy"):
        scene_from_folder(folder, SPEC)


def test_dimension_mismatch_names_both_files(folder: Path) -> None:
    np.save(folder / "text.npy", np.ones((3, 5)))
    with pytest.raises(ValueError, match=r"frame_0\.npy: .*dimension 4.*text\.npy.*dimension 5"):
        scene_from_folder(folder, SPEC)


def test_text_rows_must_match_the_protocol(folder: Path) -> None:
    with pytest.raises(ValueError, match=r"text\.npy: expected \[2, D\]"):
        scene_from_folder(folder, {**SPEC, "protocol_ids": [2, 5]})


def test_missing_folder_parts_are_named(folder: Path) -> None:
    (folder / "text.npy").unlink()
    (folder / "labels.ply").unlink()
    message = rf"{re.escape(str(folder / 'text.npy'))} .*{re.escape(str(folder / 'labels.ply'))}"
    with pytest.raises(FileNotFoundError, match=message):
        scene_from_folder(folder, SPEC)
