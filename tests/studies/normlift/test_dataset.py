"""Scenes end to end: ground truth, view selection and the scene file."""

from __future__ import annotations

import hashlib

import numpy as np

from reprolab.studies.normlift.dataset import (
    ground_truth,
    lifting_views,
    make_scene,
    read_scene,
    select_views,
    write_scene,
)
from reprolab.studies.normlift.lifting import Weights


def tiny_weights() -> Weights:
    return Weights(
        g=np.array([0, 1, 1, 2]),
        v=np.array([0, 0, 1, 1]),
        p=np.array([0, 0, 1, 0]),
        w=np.array([0.3, 0.5, 0.2, 0.9]),
        n_gaussians=3,
        n_views=2,
        n_pixels=2,
    )


def test_ground_truth_takes_the_heaviest_class_and_marks_thin_pixels_background():
    labels = np.array([2, 1, 0])
    gt = ground_truth(tiny_weights(), labels, 3, min_coverage=0.5)
    # view 0 pixel 0: class 2 (0.3) vs class 1 (0.5) -> 1; pixel 1: nothing -> -1
    # view 1 pixel 0: class 0 (0.9); pixel 1: class 1 with 0.2 < 0.5 -> -1
    assert gt.tolist() == [[1, -1], [0, -1]]


def test_select_views_renumbers_in_the_given_order():
    picked = select_views(tiny_weights(), np.array([1]))
    assert picked.n_views == 1 and picked.v.tolist() == [0, 0]
    assert picked.g.tolist() == [1, 2] and picked.w.tolist() == [0.2, 0.9]


def test_the_scene_file_round_trips_and_is_byte_identical(tmp_path, data_spec):
    scene = make_scene(data_spec, np.random.default_rng(0))
    assert scene.features.shape == (len(lifting_views(scene)), 16 * 16, 8)
    first, second = tmp_path / "a.h5", tmp_path / "b.h5"
    write_scene(first, scene)
    write_scene(second, make_scene(data_spec, np.random.default_rng(0)))
    digest = [hashlib.md5(p.read_bytes()).hexdigest() for p in (first, second)]
    assert digest[0] == digest[1]
    back = read_scene(first)
    assert np.array_equal(back.weights.g, scene.weights.g)
    assert np.array_equal(back.weights.w, scene.weights.w)
    assert np.array_equal(back.gt2d, scene.gt2d)
    assert np.allclose(back.features, scene.features, atol=2e-3)
    assert np.allclose(np.linalg.norm(back.features, axis=2), 1)
