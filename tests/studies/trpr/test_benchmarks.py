"""trpr's benchmark readers on tiny files written in the released formats: CIFAR-100's python
pickles and image folders with train/ and test/ levels."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from reprolab.studies.trpr.benchmarks import BENCHMARKS, Benchmark, read_benchmark

RED, GREEN, BLUE = (255, 0, 0), (0, 255, 0), (0, 0, 255)
CIFAR_NAMES = [b"apple", b"bear", b"cloud"]
PALETTE = [RED, GREEN, BLUE, (255, 255, 0), (0, 255, 255), (255, 0, 255)]


def _cifar_rows(images: np.ndarray) -> np.ndarray:
    """Images [N, 32, 32, 3] as CIFAR rows [N, 3072]: 1024 red, 1024 green, 1024 blue."""
    return images.transpose(0, 3, 1, 2).reshape(len(images), -1)


def _cifar_images(count: int, offset: int) -> np.ndarray:
    """Solid images from PALETTE with a distinct top-left pixel, so layout errors show."""
    images = np.zeros((count, 32, 32, 3), dtype=np.uint8)
    for index in range(count):
        images[index] = PALETTE[(index + offset) % len(PALETTE)]
        images[index, 0, 0] = (index, 100 + index, 200 + index)
    return images


def _dump(path: Path, content: dict) -> None:
    with open(path, "wb") as handle:
        pickle.dump(content, handle)


def _write_cifar(root: Path, train: np.ndarray, test: np.ndarray) -> Path:
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    for split, images, labels in (
        ("train", train, [0, 1, 2, 0, 1, 2]),
        ("test", test, [2, 1, 0, 0]),
    ):
        _dump(
            folder / split,
            {
                b"filenames": [f"{split}_{i}.png".encode() for i in range(len(images))],
                b"batch_label": f"{split} batch".encode(),
                b"fine_labels": labels,
                b"coarse_labels": [0] * len(images),
                b"data": _cifar_rows(images),
            },
        )
    _dump(folder / "meta", {b"fine_label_names": CIFAR_NAMES, b"coarse_label_names": [b"x"]})
    return folder


@pytest.fixture
def cifar(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    train, test = _cifar_images(6, 0), _cifar_images(4, 3)
    return _write_cifar(tmp_path, train, test), train, test


def test_cifar_is_read_in_file_order_with_its_labels_and_names(cifar):
    root, train, test = cifar
    bench = read_benchmark("cifar100", root, 32)
    assert isinstance(bench, Benchmark)
    assert bench.class_names == ["apple", "bear", "cloud"]
    assert bench.train_images.shape == (6, 32, 32, 3) and bench.train_images.dtype == np.uint8
    assert bench.test_images.shape == (4, 32, 32, 3)
    assert bench.train_labels.dtype == np.int64 and bench.test_labels.dtype == np.int64
    assert bench.train_labels.tolist() == [0, 1, 2, 0, 1, 2]
    assert bench.test_labels.tolist() == [2, 1, 0, 0]
    # At the native size nothing is resampled: the planar rows come back as the images written.
    assert np.array_equal(bench.train_images, train)
    assert np.array_equal(bench.test_images, test)


def test_cifar_resized_keeps_colours(cifar):
    root, _, _ = cifar
    bench = read_benchmark("cifar100", root, 48)
    assert bench.train_images.shape == (6, 48, 48, 3)
    assert bench.test_images.shape == (4, 48, 48, 3)
    # Pure red stays red away from the marked top-left corner; pure green stays green.
    assert bench.train_images[0, 24, 24].tolist() == list(RED)
    assert bench.train_images[1, 40, 10].tolist() == list(GREEN)
    assert bench.test_images[0, 30, 30].tolist() == list(PALETTE[3])


def test_cifar_missing_key_names_the_file_and_the_key(cifar):
    root, _, _ = cifar
    path = root / "test"
    _dump(path, {b"data": np.zeros((1, 3072), dtype=np.uint8), b"coarse_labels": [0]})
    with pytest.raises(ValueError, match=r"test: missing key\(s\) \[b'fine_labels'\]"):
        read_benchmark("cifar100", root, 32)


def test_cifar_missing_meta_and_bad_labels_are_errors(cifar):
    root, _, _ = cifar
    folder = root
    _dump(folder / "train", {b"data": np.zeros((2, 3072), dtype=np.uint8), b"fine_labels": [0, 7]})
    with pytest.raises(ValueError, match=r"train: b'fine_labels' must lie in 0\.\.2"):
        read_benchmark("cifar100", root, 32)
    _dump(folder / "train", {b"data": np.zeros((2, 1024), dtype=np.uint8), b"fine_labels": [0, 1]})
    with pytest.raises(ValueError, match=r"b'data' must be an array \[N, 3072\]"):
        read_benchmark("cifar100", root, 32)
    (folder / "meta").unlink()
    with pytest.raises(FileNotFoundError, match="meta: no such file"):
        read_benchmark("cifar100", root, 32)


def _save(path: Path, colour: tuple[int, int, int], size: tuple[int, int] = (12, 12)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = "JPEG" if path.suffix.lower() in (".jpg", ".jpeg") else "PNG"
    Image.new("RGB", size, colour).save(path, format=fmt)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three classes; file names, extensions and sizes chosen to test order and resizing."""
    root = tmp_path / "imagenet-r"
    _save(root / "train" / "dog" / "b.png", BLUE)
    _save(root / "train" / "dog" / "a.PNG", RED, size=(30, 16))
    _save(root / "train" / "cat" / "z.jpg", GREEN)
    _save(root / "train" / "cat" / "m.JPEG", RED)
    _save(root / "train" / "emu" / "x.jpeg", BLUE, size=(8, 20))
    (root / "train" / "emu" / "notes.txt").write_text("not an image")
    (root / "train" / "emu" / ".hidden.jpg").write_bytes(b"\x00\x01 resource fork")
    _save(root / "test" / "cat" / "t.png", GREEN)
    _save(root / "test" / "dog" / "t.png", BLUE)
    _save(root / "test" / "emu" / "t1.png", RED)
    _save(root / "test" / "emu" / "t0.png", GREEN)
    return root


def _near(pixel: np.ndarray, colour: tuple[int, int, int], tolerance: int = 12) -> bool:
    return bool(np.all(np.abs(pixel.astype(int) - np.array(colour)) <= tolerance))


def test_folder_is_read_sorted_by_class_then_file_name(folder):
    bench = read_benchmark("imagenet_r", folder, 8)
    assert bench.class_names == ["cat", "dog", "emu"]
    assert bench.train_images.shape == (5, 8, 8, 3) and bench.train_images.dtype == np.uint8
    assert bench.test_images.shape == (4, 8, 8, 3)
    assert bench.train_labels.dtype == np.int64
    assert bench.train_labels.tolist() == [0, 0, 1, 1, 2]
    assert bench.test_labels.tolist() == [0, 1, 2, 2]
    # cat: m.JPEG (red) before z.jpg (green); dog: a.PNG (red) before b.png (blue).
    train_colours = [RED, GREEN, RED, BLUE, BLUE]
    for image, colour in zip(bench.train_images, train_colours, strict=True):
        assert _near(image[4, 4], colour), (image[4, 4], colour)
    for image, colour in zip(bench.test_images, [GREEN, BLUE, GREEN, RED], strict=True):
        assert _near(image[4, 4], colour), (image[4, 4], colour)


def test_every_folder_benchmark_reads_the_same_layout(folder):
    for name, fmt in BENCHMARKS.items():
        if fmt == "folder":
            assert read_benchmark(name, folder, 4).train_images.shape == (5, 4, 4, 3)


@pytest.mark.parametrize("wide", [True, False])
def test_non_square_image_is_resized_on_its_shorter_side_and_center_cropped(tmp_path, wide):
    # A 60x20 strip: red, green, blue thirds. Shorter side 20 -> 10 makes it 30x10, and the
    # central 10x10 square is the green third alone. A squash to 10x10 would keep all three.
    strip = np.zeros((20, 60, 3), dtype=np.uint8)
    strip[:, :15], strip[:, 15:45], strip[:, 45:] = RED, GREEN, BLUE
    if not wide:
        strip = strip.transpose(1, 0, 2)
    for split in ("train", "test"):
        (tmp_path / split / "strip").mkdir(parents=True)
        Image.fromarray(strip).save(tmp_path / split / "strip" / "s.png")
    image = read_benchmark("cub", tmp_path, 10).train_images[0]
    assert image.shape == (10, 10, 3)
    assert np.all(image[..., 1] >= 240), image[..., 1]
    assert image[..., 0].max() <= 15 and image[..., 2].max() <= 15


def test_unknown_name_lists_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="unknown benchmark 'imagenet'.*cifar100.*vtab"):
        read_benchmark("imagenet", tmp_path, 8)


def test_missing_root_and_split_are_named(tmp_path, folder):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_benchmark("vtab", tmp_path / "nowhere", 8)
    (folder / "test").rename(folder / "val")
    with pytest.raises(FileNotFoundError, match=r"test: no such folder"):
        read_benchmark("vtab", folder, 8)


def test_test_folder_must_hold_the_train_classes(folder):
    for image in (folder / "test" / "emu").iterdir():
        image.unlink()
    (folder / "test" / "emu").rmdir()
    _save(folder / "test" / "fox" / "t.png", RED)
    with pytest.raises(ValueError, match=r"test: .*missing class folder\(s\) emu.*extra.* fox"):
        read_benchmark("imagenet_r", folder, 8)


def test_corrupt_image_is_an_error_naming_the_file(folder):
    corrupt = folder / "train" / "dog" / "c.jpg"
    corrupt.write_bytes(np.random.default_rng(0).integers(0, 256, 200, dtype=np.uint8).tobytes())
    with pytest.raises(ValueError, match="not a readable image") as raised:
        read_benchmark("imagenet_r", folder, 8)
    assert str(corrupt) in str(raised.value)


def test_empty_class_folder_is_an_error(folder):
    (folder / "train" / "owl").mkdir()
    (folder / "test" / "owl").mkdir()
    with pytest.raises(ValueError, match="owl: class folder holds no image"):
        read_benchmark("imagenet_r", folder, 8)
