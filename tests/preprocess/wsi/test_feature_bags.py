"""Reading features back as MIL bags: our h5 files and CLAM's h5_files / pt_files layouts."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from reprolab.core.io import write_h5
from reprolab.preprocess.wsi.feature_bags import bag_path, load_feature_bags, read_feature_bag


def features_of(seed: int, n: int, dim: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Random (n, dim) features and (n, 2) coords."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, dim)).astype(np.float32)
    coords = rng.integers(0, 10_000, size=(n, 2))
    return features, coords


def write_clam_h5(path: Path, features: np.ndarray, coords: np.ndarray) -> None:
    """An h5 file as CLAM's extract_features_fp.py writes it: attributes on `coords`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as handle:
        handle.create_dataset("features", data=features)
        dataset = handle.create_dataset("coords", data=coords.astype(np.int32))
        dataset.attrs["patch_size"] = 256
        dataset.attrs["patch_level"] = 0


def test_reads_our_features_file(tmp_path):
    features, coords = features_of(0, 5)
    write_h5(tmp_path / "s.h5", {"features": features, "coords": coords}, {"encoder_dim": 6})
    bag = read_feature_bag(tmp_path / "s.h5")
    assert bag.features.dtype == np.float32 and bag.coords.dtype == np.int64
    assert np.array_equal(bag.features, features) and np.array_equal(bag.coords, coords)
    assert bag.attrs["encoder_dim"] == 6
    features_, coords_, attrs = bag
    assert features_.shape == (5, 6) and coords_.shape == (5, 2) and isinstance(attrs, dict)


def test_reads_clams_h5_files(tmp_path):
    features, coords = features_of(1, 4)
    write_clam_h5(tmp_path / "h5_files" / "s.h5", features.astype(np.float16), coords)
    bag = read_feature_bag(tmp_path / "h5_files" / "s.h5")
    assert bag.features.dtype == np.float32 and bag.coords.dtype == np.int64
    np.testing.assert_allclose(bag.features, features, rtol=1e-3, atol=1e-3)
    assert np.array_equal(bag.coords, coords)
    assert bag.attrs["patch_size"] == 256 and bag.attrs["patch_level"] == 0


def test_reads_clams_pt_files_with_and_without_coords(tmp_path):
    features, coords = features_of(2, 7)
    (tmp_path / "pt_files").mkdir()
    torch.save(torch.from_numpy(features), tmp_path / "pt_files" / "alone.pt")
    alone = read_feature_bag(tmp_path / "pt_files" / "alone.pt")
    assert np.array_equal(alone.features, features)
    assert np.array_equal(alone.coords, np.full((7, 2), -1)) and not alone.attrs["coords_known"]
    torch.save(torch.from_numpy(features), tmp_path / "pt_files" / "paired.pt")
    write_clam_h5(tmp_path / "h5_files" / "paired.h5", features, coords)
    paired = read_feature_bag(tmp_path / "pt_files" / "paired.pt")
    assert np.array_equal(paired.coords, coords) and paired.attrs["coords_known"]


def test_load_bags_finds_each_layout_in_order(tmp_path):
    ours, clam_h5, clam_pt = features_of(3, 3), features_of(4, 0), features_of(5, 2)
    write_h5(tmp_path / "a.h5", {"features": ours[0], "coords": ours[1]})
    write_clam_h5(tmp_path / "h5_files" / "b.h5", *clam_h5)
    (tmp_path / "pt_files").mkdir()
    torch.save(torch.from_numpy(clam_pt[0]), tmp_path / "pt_files" / "c.pt")
    bags = load_feature_bags(tmp_path, ["c", "a", "b"])
    assert [len(bag.features) for bag in bags] == [2, 3, 0]
    assert bags[2].features.shape == (0, 6) and bags[2].coords.shape == (0, 2)
    assert bag_path(tmp_path, "b") == tmp_path / "h5_files" / "b.h5"


def test_bad_bags_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"slide 'z': tried .*z.h5.*h5_files.*pt_files"):
        load_feature_bags(tmp_path, ["z"])
    write_h5(tmp_path / "a.h5", {"features": features_of(0, 3)[0], "coords": features_of(0, 3)[1]})
    wide, wide_coords = features_of(1, 3, dim=8)
    write_h5(tmp_path / "w.h5", {"features": wide, "coords": wide_coords})
    with pytest.raises(ValueError, match=r"w.h5: feature size 8 differs from 6 of slide 'a'"):
        load_feature_bags(tmp_path, ["a", "w"])
    write_h5(tmp_path / "short.h5", {"features": wide, "coords": wide_coords[:2]})
    with pytest.raises(ValueError, match=r"short.h5: coords must be \(3, 2\) integers"):
        read_feature_bag(tmp_path / "short.h5")
    write_h5(tmp_path / "nof.h5", {"coords": wide_coords})
    with pytest.raises(ValueError, match=r"nof.h5: datasets \['features'\] missing"):
        read_feature_bag(tmp_path / "nof.h5")
    with pytest.raises(ValueError, match=r"x.npy: expected a .h5 or .pt"):
        read_feature_bag(tmp_path / "x.npy")
