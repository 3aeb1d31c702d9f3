"""The coords file: CLAM/TRIDENT attribute layouts, validation, and a byte-stable write."""

from __future__ import annotations

import hashlib

import h5py
import numpy as np
import pytest

from reprolab.core.io import write_h5
from reprolab.preprocess.wsi.coords_h5 import read_coords, tile_geometry, write_coords


def test_write_puts_attrs_on_the_dataset_and_is_byte_stable(tmp_path):
    coords = np.array([[0, 0], [256, 0]])
    for name in ("a.h5", "b.h5"):
        write_coords(tmp_path / name, coords, {"patch_size": 256, "patch_level": 0})
    with h5py.File(tmp_path / "a.h5") as handle:
        assert handle["coords"].dtype == np.int64
        assert handle["coords"].attrs["patch_size"] == 256 and not handle.attrs
    digest = [hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in ("a.h5", "b.h5")]
    assert digest[0] == digest[1]


def test_geometry_of_clam_and_trident_coords():
    assert tile_geometry("x.h5", {"patch_level": 2, "patch_size": 256}) == (2, 256)
    assert tile_geometry("x.h5", {"patch_size": 224, "patch_size_level0": 448}) == (0, 448)
    with pytest.raises(ValueError, match=r"x.h5: attribute 'patch_level'"):
        tile_geometry("x.h5", {"patch_size": 256})


def test_coords_attrs_on_the_dataset_as_clam_writes_them(tmp_path):
    path = tmp_path / "clam.h5"
    with h5py.File(path, "w") as handle:
        dataset = handle.create_dataset("coords", data=np.zeros((3, 2), dtype=np.int32))
        dataset.attrs["patch_size"] = 256
        dataset.attrs["patch_level"] = 0
    coords, attrs = read_coords(path)
    assert coords.dtype == np.int64 and coords.shape == (3, 2) and attrs["patch_size"] == 256


def test_bad_coords_files_name_the_problem(tmp_path):
    write_h5(tmp_path / "noattr.h5", {"coords": np.zeros((2, 2), dtype=np.int64)}, {})
    with pytest.raises(ValueError, match=r"noattr.h5: attribute 'patch_level'"):
        read_coords(tmp_path / "noattr.h5")
    write_h5(tmp_path / "shape.h5", {"coords": np.zeros((2, 3), dtype=np.int64)}, {})
    with pytest.raises(ValueError, match=r"shape.h5: 'coords' must be \(N, 2\) integers"):
        read_coords(tmp_path / "shape.h5")
    write_h5(tmp_path / "none.h5", {"xy": np.zeros((2, 2))}, {})
    with pytest.raises(ValueError, match=r"none.h5: no 'coords' dataset"):
        read_coords(tmp_path / "none.h5")
