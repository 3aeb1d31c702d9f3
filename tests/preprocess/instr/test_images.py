"""Image references: parsing, existence checks and loading from real HDF5, png and jpg files."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from reprolab.core.io import write_h5
from reprolab.preprocess.instr.images import ImageLoader, parse_ref
from tests.preprocess.instr.conftest import write_images_h5


def test_parse_ref_resolves_h5_beside_the_records_and_files_under_the_root(tmp_path):
    ref = parse_ref("h5:../data.h5#/group/images/12", tmp_path / "task", tmp_path / "root")
    assert (ref.path, ref.dataset, ref.index) == (tmp_path / "data.h5", "/group/images", 12)
    assert str(ref) == f"h5:{tmp_path}/data.h5#/group/images/12"
    assert parse_ref("COCO/a.JPG", tmp_path, tmp_path / "root").path == tmp_path / "root/COCO/a.JPG"
    assert parse_ref("a.png", tmp_path).path == tmp_path / "a.png"
    assert parse_ref("/abs/a.png", tmp_path, tmp_path / "root").path.as_posix() == "/abs/a.png"
    assert parse_ref(str(ref), "/elsewhere") == parse_ref(str(ref), tmp_path)


@pytest.mark.parametrize("text", ["h5:x.h5", "h5:x.h5#images/1", "h5:x.h5#/images/-1", "h5:#/i/1"])
def test_parse_ref_refuses_malformed_h5(text, tmp_path):
    with pytest.raises(ValueError, match="is not of the form h5:FILE#/DATASET/INDEX"):
        parse_ref(text, tmp_path)


def test_parse_ref_refuses_other_extensions(tmp_path):
    with pytest.raises(ValueError, match=r"image 'a.gif' is neither h5:.* \.png, \.jpg, \.jpeg"):
        parse_ref("a.gif", tmp_path)


def test_problems_name_the_missing_part(tmp_path):
    write_images_h5(tmp_path / "ok.h5", count=3)
    write_h5(tmp_path / "float.h5", {"images": np.zeros((2, 4, 4), dtype=np.float32)})
    write_h5(tmp_path / "flat.h5", {"images": np.zeros((2, 4), dtype=np.uint8)})
    (tmp_path / "text.h5").write_text("not hdf5")
    expected = {
        "h5:ok.h5#/images/2": None,
        "h5:ok.h5#/images/3": "index 3 out of range, dataset '/images' holds 3 images",
        "h5:ok.h5#/pixels/0": "no dataset '/pixels' in",
        "h5:none.h5#/images/0": f"file {tmp_path}/none.h5 does not exist",
        "h5:text.h5#/images/0": "text.h5 is not an HDF5 file",
        "h5:float.h5#/images/0": "is float32, expected uint8",
        "h5:flat.h5#/images/0": "has shape (2, 4), expected [N, H, W] or [N, H, W, 3]",
        "missing.png": f"image 'missing.png' does not exist (looked in {tmp_path})",
    }
    with ImageLoader() as loader:
        for text, message in expected.items():
            problem = loader.problem(parse_ref(text, tmp_path))
            if message is None:
                assert problem is None
            else:
                assert problem.startswith(f"image '{text}'") and message in problem, problem


def test_load_reads_h5_rows_and_files_as_rgb(tmp_path):
    images = write_images_h5(tmp_path / "ok.h5", count=3)
    bgr = np.zeros((6, 7, 3), dtype=np.uint8)
    bgr[..., 0], bgr[..., 1], bgr[..., 2] = 10, 20, 30  # blue, green, red
    cv2.imwrite(str(tmp_path / "colour.png"), bgr)
    gray = np.arange(30, dtype=np.uint8).reshape(5, 6)
    cv2.imwrite(str(tmp_path / "gray.png"), gray)
    (tmp_path / "broken.png").write_bytes(b"not a png")
    with ImageLoader() as loader:
        np.testing.assert_array_equal(
            loader.load(parse_ref("h5:ok.h5#/images/1", tmp_path)), images[1]
        )
        colour = loader.load(parse_ref("colour.png", tmp_path))
        assert colour.dtype == np.uint8 and colour.shape == (6, 7, 3)
        assert tuple(colour[0, 0]) == (30, 20, 10)  # RGB
        np.testing.assert_array_equal(loader.load(str(tmp_path / "gray.png")), gray)
        with pytest.raises(ValueError, match="index 5 out of range"):
            loader.load(parse_ref("h5:ok.h5#/images/5", tmp_path))
        with pytest.raises(ValueError, match="does not exist"):
            loader.load(parse_ref("none.jpg", tmp_path))
        with pytest.raises(ValueError, match="broken.png cannot be decoded"):
            loader.load(parse_ref("broken.png", tmp_path))


def test_load_many_keeps_the_order_and_reads_h5_rows_together(tmp_path):
    images = write_images_h5(tmp_path / "ok.h5", count=4)
    cv2.imwrite(str(tmp_path / "gray.png"), np.full((2, 2), 99, dtype=np.uint8))
    texts = ["h5:ok.h5#/images/3", "gray.png", "h5:ok.h5#/images/0", "h5:ok.h5#/images/3"]
    with ImageLoader() as loader:
        loaded = loader.load_many(parse_ref(t, tmp_path) for t in texts)
        rows = loader.read_h5(tmp_path / "ok.h5", "/images", [2, 0, 2])
        with pytest.raises(ValueError, match=r"must lie in \[0, 4\), got 1..4"):
            loader.read_h5(tmp_path / "ok.h5", "/images", [1, 4])
    for got, want in zip(
        loaded, [images[3], np.full((2, 2), 99), images[0], images[3]], strict=True
    ):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(rows, images[[2, 0, 2]])


def test_close_releases_the_files_and_the_loader_reopens_them(tmp_path):
    write_images_h5(tmp_path / "ok.h5", count=2)
    ref = parse_ref("h5:ok.h5#/images/1", tmp_path)
    loader = ImageLoader()
    first = loader.load(ref)
    loader.close()
    write_images_h5(tmp_path / "ok.h5", count=1)  # replaced on disk while closed
    assert "index 1 out of range" in loader.problem(ref)
    assert first[0, 0] == 1
    loader.close()
