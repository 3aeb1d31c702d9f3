"""Synthetic text embeddings and feature maps."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.normlift.features import feature_map, prototypes, text_embeddings
from reprolab.studies.normlift.lifting import normalise


def test_text_embeddings_are_unit_and_share_a_component():
    text = text_embeddings(12, 256, 1.2, np.random.default_rng(0))
    assert np.allclose(np.linalg.norm(text, axis=1), 1)
    cos = text @ text.T
    off = cos[~np.eye(12, dtype=bool)]
    assert off.mean() == pytest.approx(1 / (1 + 1.2**2), abs=0.05)


def spec(**changes):
    base = {"patch_grid": 16, "noise": [0.0, 0.0], "hallucinations": 0, "hallucination_radius": 3}
    return {**base, **changes}


def test_a_clean_full_resolution_map_is_the_prototype_of_each_pixel():
    rng = np.random.default_rng(1)
    protos = prototypes(text_embeddings(4, 16, 1.2, rng), 0.5, rng)
    labels = rng.integers(-1, 4, size=(16, 16))
    maps = feature_map(labels, protos, spec(), rng)
    expected = normalise(protos[np.where(labels < 0, 4, labels)])
    assert np.allclose(maps, expected)


def test_hallucinations_overwrite_disks_with_a_wrong_class():
    rng = np.random.default_rng(2)
    protos = prototypes(text_embeddings(4, 16, 1.2, rng), 0.5, rng)
    labels = np.zeros((16, 16), dtype=int)
    maps = feature_map(labels, protos, spec(hallucinations=1, hallucination_radius=4), rng)
    nearest = np.argmax(maps.reshape(-1, 16) @ normalise(protos[:4]).T, axis=1)
    wrong = nearest != 0
    assert 30 <= wrong.sum() <= 60  # one disk of radius 4: about 50 pixels
    assert len(np.unique(nearest[wrong])) == 1


def test_low_resolution_mixes_classes_at_a_boundary():
    rng = np.random.default_rng(3)
    protos = prototypes(text_embeddings(2, 16, 1.2, rng), 0.5, rng)
    labels = np.zeros((16, 16), dtype=int)
    labels[:, 8:] = 1
    maps = feature_map(labels, protos, spec(patch_grid=4), rng)
    left, right = normalise(protos[0]), normalise(protos[1])
    at_edge = maps[5, 7]
    assert at_edge @ left < 0.9999 and at_edge @ right < 0.9999
    assert maps[5, 0] @ left == pytest.approx(1.0)
