"""ntm's data: the 2-D benchmarks (seeded, modes at the radius, checkerboard inside its
support), digits and dequantisation, the CIFAR-10 and image-folder readers on tiny files in the
released formats (and on broken ones, named in the error), and the dataset registry."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch
from PIL import Image

from reprolab.studies.ntm.data import (
    CIFAR10_TEST_BATCHES,
    black_squares,
    center_crop_resize,
    checker_support,
    checkerboard,
    dataset_sampler,
    dequantize,
    digits_images,
    eight_gaussian_modes,
    eight_gaussians,
    read_cifar10_batches,
    read_image_folder,
    to_unit_range,
)


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("draw", [eight_gaussians, checkerboard])
def test_toy_sources_are_float32_and_fixed_by_the_seed(draw):
    x = draw(1000, gen(3))
    assert x.shape == (1000, 2) and x.dtype == torch.float32
    assert torch.equal(x, draw(1000, gen(3)))
    assert not torch.equal(x, draw(1000, gen(4)))


def test_eight_gaussians_sit_on_their_modes():
    modes = eight_gaussian_modes(4.0)
    assert torch.allclose(modes.norm(dim=1), torch.full((8,), 4.0))
    assert torch.allclose(modes[2], torch.tensor([0.0, 4.0]), atol=1e-6)
    x = eight_gaussians(40_000, gen(), radius=4.0, std=0.15)
    nearest = torch.cdist(x, modes).argmin(1)
    counts = torch.bincount(nearest, minlength=8)
    assert counts.min() > 4_500 and counts.max() < 5_500  # equal weights
    offsets = x - modes[nearest]
    assert offsets.mean(0).abs().max() < 0.01
    assert offsets.std(0) == pytest.approx(torch.tensor([0.15, 0.15]), rel=0.03)


def test_checkerboard_fills_the_black_squares_only():
    x = checkerboard(50_000, gen(), cells=4, half_width=4.0)
    assert checker_support(x, 4, 4.0).all()
    assert x.abs().max() < 4.0
    square = ((x + 4.0) // 2.0).long()
    assert ((square.sum(1) % 2) == 0).all()
    counts = torch.bincount(square[:, 0] * 4 + square[:, 1], minlength=16)
    black = counts[black_squares(4)[:, 0] * 4 + black_squares(4)[:, 1]]
    assert len(black) == 8 and black.min() > 5_800 and black.max() < 6_700
    other = checkerboard(1000, gen(), cells=3, half_width=1.5)
    assert checker_support(other, 3, 1.5).all() and len(black_squares(3)) == 5


def test_checker_support_marks_white_squares_and_outside_points():
    points = torch.tensor([[-3.0, -3.0], [-1.0, -3.0], [1.0, 1.0], [4.5, 0.0], [-3.0, 3.0]])
    assert checker_support(points, 4, 4.0).tolist() == [True, False, True, False, False]
    assert not checker_support(torch.tensor([[4.0, -3.0]]), 4, 4.0).item()  # right edge is open


def test_digits_are_64_grey_levels_in_the_unit_range():
    images, labels = digits_images()
    assert images.shape == (1797, 64) and images.dtype == torch.float32
    assert images.min() == -1.0 and images.max() == 1.0
    assert sorted(labels.unique().tolist()) == list(range(10))
    levels = (images + 1) / 2 * 16
    assert torch.equal(levels, levels.round())


def test_dequantisation_spreads_each_level_over_its_bin():
    images, _ = digits_images()
    x = dequantize(images, gen(1))
    assert torch.equal(x, dequantize(images, gen(1)))
    assert x.dtype == torch.float32 and x.min() >= -1.0 and x.max() < 1.0
    level = ((images + 1) / 2 * 16).round()
    assert torch.equal(torch.floor((x.double() + 1) / 2 * 17), level.double())
    within = (x.double() + 1) / 2 * 17 - level
    assert within.mean().item() == pytest.approx(0.5, abs=0.01)  # uniform in the bin
    with pytest.raises(ValueError, match="17 grey levels"):
        dequantize(images + 0.03, gen())


def test_to_unit_range_dequantises_bytes():
    images = torch.tensor([[0, 128, 255]], dtype=torch.uint8)
    centres = to_unit_range(images)
    assert centres[0].tolist() == pytest.approx([-1 + 1 / 256, 1 / 256, 1 - 1 / 256])
    noisy = to_unit_range(images.expand(10_000, 3), gen())
    assert noisy.min() >= -1.0 and noisy.max() < 1.0
    assert torch.equal(((noisy.double() + 1) * 128).floor(), images.double().expand(10_000, 3))
    with pytest.raises(ValueError, match="uint8"):
        to_unit_range(images.float())


# CIFAR-10


def write_cifar_batch(path, images: np.ndarray, labels: list[int]) -> None:
    """A CIFAR-10 python batch as released: a pickled dict with byte-string keys."""
    batch = {
        b"batch_label": b"training batch 1 of 5",
        b"labels": labels,
        b"data": images.reshape(len(images), -1),
        b"filenames": [f"img_{i}.png".encode() for i in range(len(images))],
    }
    with open(path, "wb") as fh:
        pickle.dump(batch, fh)


def cifar_images(count: int, offset: int) -> np.ndarray:
    return ((np.arange(count * 3072).reshape(count, 3, 32, 32) + offset) % 256).astype(np.uint8)


def test_cifar_reader_reads_batches_in_order(tmp_path):
    first, second = cifar_images(5, 0), cifar_images(5, 7)
    write_cifar_batch(tmp_path / "data_batch_1", first, [0, 1, 2, 3, 4])
    write_cifar_batch(tmp_path / "data_batch_2", second, [5, 6, 7, 8, 9])
    write_cifar_batch(tmp_path / "test_batch", second[:2], [9, 9])
    images, labels = read_cifar10_batches(tmp_path, ("data_batch_1", "data_batch_2"))
    assert images.shape == (10, 3, 32, 32) and images.dtype == torch.uint8
    assert torch.equal(images, torch.from_numpy(np.concatenate([first, second])))
    assert images[0, 1, 0, 0].item() == 1024 % 256  # rows hold red, then green, then blue
    assert labels.tolist() == list(range(10)) and labels.dtype == torch.int64
    test_images, test_labels = read_cifar10_batches(tmp_path, CIFAR10_TEST_BATCHES)
    assert test_images.shape == (2, 3, 32, 32) and test_labels.tolist() == [9, 9]
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        read_cifar10_batches(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        read_cifar10_batches(tmp_path / "missing")


def test_cifar_reader_names_a_malformed_batch(tmp_path):
    wrong_shape = np.zeros((5, 1000), dtype=np.uint8)
    with open(tmp_path / "data_batch_1", "wb") as fh:
        pickle.dump({b"data": wrong_shape, b"labels": [0] * 5}, fh)
    with pytest.raises(
        ValueError, match=r"data_batch_1: b'data' must be a uint8 array \[N, 3072\]"
    ):
        read_cifar10_batches(tmp_path, ("data_batch_1",))
    write_cifar_batch(tmp_path / "data_batch_2", cifar_images(5, 0), [0, 1, 2])
    with pytest.raises(ValueError, match="data_batch_2: b'labels' must be 5 integers"):
        read_cifar10_batches(tmp_path, ("data_batch_2",))
    (tmp_path / "data_batch_3").write_bytes(b"not a pickle at all")
    with pytest.raises(ValueError, match="data_batch_3: not a CIFAR-10 python batch"):
        read_cifar10_batches(tmp_path, ("data_batch_3",))
    with open(tmp_path / "data_batch_4", "wb") as fh:
        pickle.dump({b"data": cifar_images(1, 0).reshape(1, -1)}, fh)
    with pytest.raises(ValueError, match=r"data_batch_4: .*missing key"):
        read_cifar10_batches(tmp_path, ("data_batch_4",))


# image folders


def write_png(path, width: int, height: int, value: int) -> None:
    Image.new("RGB", (width, height), (value, 255 - value, 0)).save(path)


def test_image_folder_reader_labels_by_sorted_class_names(tmp_path):
    for name, value in (("zebra", 200), ("ant", 10)):
        (tmp_path / name).mkdir()
        write_png(tmp_path / name / "b.png", 20, 12, value)
        write_png(tmp_path / name / "a.PNG", 12, 12, value + 1)
    (tmp_path / "ant" / "notes.txt").write_text("not an image")
    (tmp_path / "ant" / ".hidden.png").write_bytes(b"macOS resource fork")
    images, labels, classes = read_image_folder(tmp_path, 8)
    assert classes == ["ant", "zebra"] and labels.tolist() == [0, 0, 1, 1]
    assert images.shape == (4, 3, 8, 8) and images.dtype == torch.uint8
    assert images[:, 0, 4, 4].tolist() == [11, 10, 201, 200]  # a.PNG before b.png
    assert images[0, 1, 0, 0].item() == 244


def test_center_crop_keeps_the_middle_of_the_longer_side():
    image = Image.new("L", (30, 10), 0)
    image.paste(255, (10, 0, 20, 10))  # a white middle third
    cropped = np.asarray(center_crop_resize(image, 5))
    assert cropped.shape == (5, 5) and (cropped == 255).all()


def test_image_folder_reader_names_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        read_image_folder(tmp_path / "missing", 8)
    with pytest.raises(ValueError, match="no class subfolders"):
        read_image_folder(tmp_path, 8)
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "readme.txt").write_text("hi")
    with pytest.raises(ValueError, match="cat: class folder holds no image"):
        read_image_folder(tmp_path, 8)
    write_png(tmp_path / "cat" / "good.png", 8, 8, 1)
    (tmp_path / "cat" / "junk.jpg").write_bytes(b"\xff\xd8 this is no jpeg")
    with pytest.raises(ValueError, match=r"junk\.jpg: not a readable"):
        read_image_folder(tmp_path, 8)
    (tmp_path / "cat" / "junk.jpg").unlink()
    whole = (tmp_path / "cat" / "good.png").read_bytes()
    (tmp_path / "cat" / "half.png").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"half\.png: not a readable"):
        read_image_folder(tmp_path, 8)


# dataset registry


def test_samplers_are_fixed_by_the_seed_and_shaped_per_kind(tmp_path):
    spec = {"kind": "checker", "train_size": 500, "test_size": 200}
    one, two = dataset_sampler(spec, gen(5)), dataset_sampler(spec, gen(5))
    assert one.sample_shape == (2,) and one.test.shape == (200, 2)
    assert torch.equal(one.train_batch(64), two.train_batch(64))
    assert checker_support(one.train_batch(256)).all()
    gauss = dataset_sampler({"kind": "8gauss", "train_size": 100, "std": 0.0}, gen())
    assert torch.allclose(gauss.train_batch(50).norm(dim=1), torch.full((50,), 4.0))
    digits = dataset_sampler({"kind": "digits"}, gen())
    assert digits.train.shape == (1500, 64) and digits.test.shape == (297, 64)
    batch = digits.train_batch(32)
    assert batch.dtype == torch.float32 and batch.min() >= -1 and batch.max() < 1
    # the split does not depend on the run's generator
    assert torch.equal(dataset_sampler({"kind": "digits"}, gen(9)).train, digits.train)
    for name in ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"):
        write_cifar_batch(tmp_path / name, cifar_images(2, 0), [0, 1])
    write_cifar_batch(tmp_path / "test_batch", cifar_images(3, 0), [0, 1, 2])
    cifar = dataset_sampler({"kind": "cifar10", "folder": str(tmp_path)}, gen())
    assert cifar.train.shape == (10, 3, 32, 32) and cifar.test.shape == (3, 3, 32, 32)
    assert cifar.train_batch(4).dtype == torch.float32 and cifar.sample_shape == (3, 32, 32)
    assert math.isclose(cifar.test.max().item(), 1.0, abs_tol=2 / 256)


def test_registry_refuses_unknown_kinds_and_options():
    with pytest.raises(ValueError, match="unknown dataset kind 'mnist'"):
        dataset_sampler({"kind": "mnist"}, gen())
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['radus'\]"):
        dataset_sampler({"kind": "8gauss", "radus": 2.0}, gen())
    with pytest.raises(ValueError, match=r"missing option\(s\) \['folder'\]"):
        dataset_sampler({"kind": "cifar10"}, gen())
