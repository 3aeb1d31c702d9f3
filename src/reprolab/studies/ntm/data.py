"""ntm's data: the 2-D benchmarks, sklearn's digits, and readers of CIFAR-10 and image folders.

Every source returns float32 torch tensors (uint8 for raw images) and draws its randomness from
a `torch.Generator` passed in, so a seed fixes the data.

- `eight_gaussians`: an equal mixture of 8 isotropic Gaussians (std 0.15) whose means are
  `eight_gaussian_modes`, evenly spaced on the circle of radius 4, the first at angle 0.
- `checkerboard`: uniform on the black squares of a `cells`×`cells` board covering
  [−h, h]². Square (i, j) (column i from x = −h, row j from y = −h, both from 0) is black when
  i + j is even, so the corner square at (−h, −h) is black. `checker_support` says which points
  lie in a black square; squares are half-open, [left, right) × [bottom, top), and a sample is
  kept strictly below its square's right and top edges in float32 so that every sample passes
  `checker_support`.
- `digits_images`: sklearn's 8×8 digits (1797 images, ships with scikit-learn) as rows of 64
  grey levels 0..16 mapped linearly onto [−1, 1] (pixel/16·2 − 1), with their labels.
- Uniform dequantisation, the same rule for digits (`dequantize`, 17 levels) and 8-bit images
  (`to_unit_range`, 256 levels): level k becomes k + u with u ~ U[0, 1), and the result is
  divided by the number of levels and mapped onto [−1, 1), so level k fills the bin
  [−1 + 2k/L, −1 + 2(k+1)/L) of width 2/L and `floor((x + 1)/2·L)` gives k back. A model's
  density on [−1, 1)^D then bounds the discrete likelihood: log P(k) ≥ E[log p(x)] + D·log(2/L).
- Paper-scale readers of the released formats: `read_cifar10_batches` reads CIFAR-10's "python
  version" pickles (the project's restricted unpickler, `studies.ndfa.formats`, which builds
  arrays and nothing else), and `read_image_folder` an ImageNet-style folder of class
  subfolders (all in memory; at ImageNet scale, read `image_folder_files` with `read_image`
  in chunks instead). Bad input raises FileNotFoundError (a missing folder or batch) or ValueError
  naming the file and what was expected.
- `dataset_sampler` maps a spec's `kind` ("8gauss", "checker", "digits", "cifar10",
  "image_folder") to a `DatasetSampler`: a fixed training set, from which `train_batch` draws
  rows with replacement (images freshly dequantised each time), and a fixed test set.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from sklearn.datasets import load_digits

from reprolab.studies.ndfa.formats import read_cifar_pickle

DIGIT_LEVELS = 17
"""Grey levels of sklearn's digits: 0..16."""

CIFAR10_TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_TEST_BATCHES = ("test_batch",)
CIFAR10_SHAPE = (3, 32, 32)

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg")
"""Extensions (any case) of the files `read_image_folder` reads; other files are ignored."""


# 2-D benchmarks


def _check_count(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"the number of samples must be an integer >= 0, got {n!r}")


def eight_gaussian_modes(radius: float = 4.0) -> torch.Tensor:
    """The 8 mode centres [8, 2] of `eight_gaussians`: radius·(cos 2πk/8, sin 2πk/8)."""
    angles = torch.arange(8, dtype=torch.float64) * (2 * math.pi / 8)
    return (radius * torch.stack([angles.cos(), angles.sin()], dim=1)).float()


def eight_gaussians(
    n: int, generator: torch.Generator, radius: float = 4.0, std: float = 0.15
) -> torch.Tensor:
    """n samples [n, 2] of the equal mixture of N(mode, std²·I) over `eight_gaussian_modes`."""
    _check_count(n)
    modes = eight_gaussian_modes(radius)
    which = torch.randint(len(modes), (n,), generator=generator)
    return modes[which] + std * torch.randn((n, 2), generator=generator)


def _checker_edges(cells: int, half_width: float, dtype: torch.dtype) -> torch.Tensor:
    """The cells + 1 square edges along one axis, −h..h (the same values for sampler and test)."""
    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 1:
        raise ValueError(f"cells must be an integer >= 1, got {cells!r}")
    if not half_width > 0:
        raise ValueError(f"half_width must be > 0, got {half_width!r}")
    return torch.linspace(-half_width, half_width, cells + 1, dtype=torch.float64).to(dtype)


def black_squares(cells: int) -> torch.Tensor:
    """The (column, row) indices [cells²/2 rounded up, 2] of the black squares (i + j even)."""
    grid = torch.cartesian_prod(torch.arange(cells), torch.arange(cells)).reshape(-1, 2)
    return grid[grid.sum(1) % 2 == 0]


def checkerboard(
    n: int, generator: torch.Generator, cells: int = 4, half_width: float = 4.0
) -> torch.Tensor:
    """n samples [n, 2] uniform on the black squares of the board on [−h, h]² (see module)."""
    _check_count(n)
    edges = _checker_edges(cells, half_width, torch.float32)
    black = black_squares(cells)
    squares = black[torch.randint(len(black), (n,), generator=generator)]
    low, high = edges[squares], edges[squares + 1]
    x = low + torch.rand((n, 2), generator=generator) * (high - low)
    return torch.minimum(x, torch.nextafter(high, low))


def checker_support(x: torch.Tensor, cells: int = 4, half_width: float = 4.0) -> torch.Tensor:
    """Per point of x [n, 2], whether it lies in a black square of the board (bool [n])."""
    if x.ndim != 2 or x.shape[1] != 2:
        raise ValueError(f"checker_support expects points [n, 2], got shape {list(x.shape)}")
    edges = _checker_edges(cells, half_width, x.dtype)
    index = torch.searchsorted(edges, x.T.contiguous(), right=True).T - 1
    inside = ((index >= 0) & (index < cells)).all(1)
    return inside & (index.sum(1) % 2 == 0)


# sklearn's digits and dequantisation


def digits_images() -> tuple[torch.Tensor, torch.Tensor]:
    """sklearn's digits: images float32 [1797, 64] in [−1, 1] (pixel/16·2 − 1), labels int64."""
    bunch = load_digits()
    images = torch.from_numpy(bunch.data / (DIGIT_LEVELS - 1) * 2 - 1).float()
    return images, torch.from_numpy(bunch.target).long()


def _dequantize_levels(
    levels_of: torch.Tensor, levels: int, generator: torch.Generator | None
) -> torch.Tensor:
    """Integer levels k (as numbers) to float32 in [−1, 1): (k + u)/L·2 − 1, u ~ U[0, 1), or the
    bin centre (u = ½) without a generator. Each value is kept inside its bin after rounding to
    float32 (the bin edges −1 + 2k/L are not all float32 numbers), so the level stays
    recoverable."""
    k = levels_of.to(torch.float64)
    if generator is None:
        u = torch.full_like(k, 0.5)
    else:
        u = torch.rand(k.shape, generator=generator, dtype=torch.float64)
    low, high = k / levels * 2 - 1, (k + 1) / levels * 2 - 1
    low32, high32 = low.float(), high.float()
    low32 = torch.where(low32.double() < low, torch.nextafter(low32, high32), low32)
    high32 = torch.where(high32.double() >= high, torch.nextafter(high32, low32), high32)
    return torch.clamp(((k + u) / levels * 2 - 1).float(), low32, high32)


def dequantize(
    x: torch.Tensor, generator: torch.Generator, levels: int = DIGIT_LEVELS
) -> torch.Tensor:
    """Uniformly dequantised x: values on the grid of `levels` grey levels spanning [−1, 1]
    (as `digits_images` gives) become float32 spread over their bins of [−1, 1) (see module).

    Raises ValueError when x is not on that grid.
    """
    if levels < 2:
        raise ValueError(f"levels must be >= 2, got {levels}")
    scaled = (x.to(torch.float64) + 1) / 2 * (levels - 1)
    k = scaled.round()
    if ((scaled - k).abs() > 1e-4).any() or (k < 0).any() or (k > levels - 1).any():
        raise ValueError(f"x must lie on the {levels} grey levels spanning [-1, 1]")
    return _dequantize_levels(k, levels, generator)


def to_unit_range(images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """uint8 images as float32 in [−1, 1): (v + u)/256·2 − 1 with u ~ U[0, 1) drawn from
    `generator` (uniform dequantisation), or u = ½ (the bin centres) without one."""
    if images.dtype != torch.uint8:
        raise ValueError(f"to_unit_range expects uint8 images, got {images.dtype}")
    return _dequantize_levels(images, 256, generator)


# CIFAR-10, python version


def _read_cifar10_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 batch pickle as uint8 images [N, 3, 32, 32] and int64 labels [N]."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file; expected a CIFAR-10 python batch "
            f"({', '.join(CIFAR10_TRAIN_BATCHES + CIFAR10_TEST_BATCHES)})"
        )
    try:
        batch = read_cifar_pickle(path, (b"data", b"labels"))
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as exc:
        detail = str(exc).removeprefix(f"{path}: ")
        raise ValueError(f"{path}: not a CIFAR-10 python batch: {detail}") from exc
    data = batch[b"data"]
    pixels = int(np.prod(CIFAR10_SHAPE))
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.shape[1:] != (pixels,):
        found = f"{data.dtype} {list(data.shape)}" if isinstance(data, np.ndarray) else type(data)
        raise ValueError(f"{path}: b'data' must be a uint8 array [N, {pixels}], found {found}")
    labels = np.asarray(batch[b"labels"])
    if labels.shape != (len(data),) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"{path}: b'labels' must be {len(data)} integers (one per image), found "
            f"{labels.dtype} {list(labels.shape)}"
        )
    if len(labels) and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(
            f"{path}: b'labels' must lie in 0..9, found {labels.min()}..{labels.max()}"
        )
    return data.reshape(-1, *CIFAR10_SHAPE), labels.astype(np.int64)


def read_cifar10_batches(
    folder: str | Path, batches: tuple[str, ...] = CIFAR10_TRAIN_BATCHES
) -> tuple[torch.Tensor, torch.Tensor]:
    """CIFAR-10's python-version `batches` in `folder` (`cifar-10-batches-py/`, as unpacked), in
    the given order: images uint8 [N, 3, 32, 32] (channels, then rows) and labels int64 [N].

    The default reads the training set; `CIFAR10_TEST_BATCHES` the test set. Raises
    FileNotFoundError naming a missing folder or batch, and ValueError naming a batch that is
    not a pickled dict with b"data" uint8 [N, 3072] and b"labels" N ints in 0..9.
    """
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(
            f"{root}: no such folder; expected cifar-10-batches-py with data_batch_1..5 and "
            "test_batch"
        )
    if not batches:
        raise ValueError("batches must name at least one CIFAR-10 batch file")
    parts = [_read_cifar10_batch(root / name) for name in batches]
    images = np.concatenate([images for images, _ in parts])
    labels = np.concatenate([labels for _, labels in parts])
    return torch.from_numpy(np.array(images, copy=True)), torch.from_numpy(labels)


# image folders


def image_folder_files(folder: str | Path) -> tuple[list[tuple[Path, int]], list[str]]:
    """The (file, class index) pairs of an ImageNet-style folder, and its class names.

    Classes are the visible subfolders of `folder`, sorted by name, class i being the i-th;
    files are the visible `IMAGE_EXTENSIONS` files directly in a class folder, sorted by name
    (other files are ignored). Raises FileNotFoundError for a missing folder and ValueError
    naming the folder when it has no class subfolder or a class folder holds no image.
    """
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(
            f"{root}: no such folder; expected an image folder with one subfolder per class"
        )
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not classes:
        raise ValueError(f"{root}: no class subfolders; expected <folder>/<class>/<image>")
    files: list[tuple[Path, int]] = []
    for label, name in enumerate(classes):
        found = sorted(
            p
            for p in (root / name).iterdir()
            if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_EXTENSIONS
        )
        if not found:
            raise ValueError(
                f"{root / name}: class folder holds no image ({', '.join(IMAGE_EXTENSIONS)})"
            )
        files.extend((path, label) for path in found)
    return files, classes


def center_crop_resize(image: Image.Image, size: int) -> Image.Image:
    """The central square of `image`, `size` pixels wide, as ADM/DiT prepare ImageNet: halve
    with a box filter while the shorter side is at least 2·size, resize (BICUBIC) so the shorter
    side is `size`, then crop the centre."""
    while min(image.size) >= 2 * size:
        image = image.resize(tuple(side // 2 for side in image.size), Image.Resampling.BOX)
    scale = size / min(image.size)
    image = image.resize(
        tuple(round(side * scale) for side in image.size), Image.Resampling.BICUBIC
    )
    left, top = (image.width - size) // 2, (image.height - size) // 2
    return image.crop((left, top, left + size, top + size))


def read_image(path: str | Path, size: int) -> np.ndarray:
    """One image file as RGB uint8 [3, size, size] (`center_crop_resize`); ValueError naming the
    file when Pillow cannot read it."""
    try:
        with Image.open(path) as image:
            rgb = image.convert("RGB")
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: not a readable PNG/JPEG image ({exc})") from exc
    return np.asarray(center_crop_resize(rgb, size), dtype=np.uint8).transpose(2, 0, 1)


def read_image_folder(
    folder: str | Path, size: int
) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """An ImageNet-style folder `<folder>/<class>/<image>` (`image_folder_files`): images uint8
    [N, 3, size, size] center-cropped and resized by `center_crop_resize`, labels int64 [N]
    (class indices in sorted folder-name order), and the class names."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be an integer >= 1, got {size!r}")
    files, classes = image_folder_files(folder)
    images = np.empty((len(files), 3, size, size), dtype=np.uint8)
    for index, (path, _) in enumerate(files):
        images[index] = read_image(path, size)
    labels = torch.tensor([label for _, label in files], dtype=torch.int64)
    return torch.from_numpy(images), labels, classes


# dataset specs


@dataclass
class DatasetSampler:
    """A dataset as training needs it: a fixed training set (`train`, stored as points, digit
    levels or uint8 images), a fixed float32 test set, and `prepare`, which turns stored rows
    into float32 training rows (dequantising images with fresh noise each time)."""

    kind: str
    train: torch.Tensor
    test: torch.Tensor
    generator: torch.Generator
    prepare: Callable[[torch.Tensor, torch.Generator], torch.Tensor]

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """The shape of one sample: (2,), (64,) or (3, S, S)."""
        return tuple(self.train.shape[1:])

    def train_batch(self, n: int) -> torch.Tensor:
        """n training rows drawn uniformly with replacement from the training set, prepared."""
        rows = torch.randint(len(self.train), (n,), generator=self.generator)
        return self.prepare(self.train[rows], self.generator)


def _options(spec: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's options over `defaults`: ValueError for a key not in `defaults` (a typo) or
    for one whose default is None and that the spec lacks (a required one)."""
    options = {key: value for key, value in spec.items() if key != "kind"}
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise ValueError(
            f"dataset {spec['kind']!r}: unknown option(s) {unknown}; known: {sorted(defaults)}"
        )
    merged = {**defaults, **options}
    missing = sorted(key for key, value in merged.items() if value is None)
    if missing:
        raise ValueError(f"dataset {spec['kind']!r}: missing option(s) {missing}")
    return merged


def _as_is(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return x


def _toy_sampler(
    kind: str, draw: Callable[..., torch.Tensor], defaults: Mapping[str, Any]
) -> Callable[[Mapping[str, Any], torch.Generator], DatasetSampler]:
    """A 2-D benchmark: `train_size` then `test_size` samples of `draw`, in that order."""

    def build(spec: Mapping[str, Any], generator: torch.Generator) -> DatasetSampler:
        options = _options(spec, {"train_size": 20_000, "test_size": 10_000, **defaults})
        shape = {key: options[key] for key in defaults}
        train = draw(options["train_size"], generator, **shape)
        test = draw(options["test_size"], generator, **shape)
        return DatasetSampler(kind, train, test, generator, _as_is)

    return build


def _digits_sampler(spec: Mapping[str, Any], generator: torch.Generator) -> DatasetSampler:
    """sklearn's digits, split by a permutation seeded by `split_seed` (not by `generator`, so
    every run shares the split): the first `train_size` rows train, the rest test."""
    options = _options(spec, {"train_size": 1500, "split_seed": 0})
    images, _ = digits_images()
    if not 0 < options["train_size"] < len(images):
        raise ValueError(f"digits: train_size must be in 1..{len(images) - 1}")
    order = torch.randperm(
        len(images), generator=torch.Generator().manual_seed(options["split_seed"])
    )
    train, test = images[order[: options["train_size"]]], images[order[options["train_size"] :]]
    return DatasetSampler("digits", train, dequantize(test, generator), generator, dequantize)


def _cifar10_sampler(spec: Mapping[str, Any], generator: torch.Generator) -> DatasetSampler:
    """CIFAR-10 from `folder` (cifar-10-batches-py): data_batch_1..5 train, test_batch tests."""
    options = _options(spec, {"folder": None})
    train, _ = read_cifar10_batches(options["folder"])
    test, _ = read_cifar10_batches(options["folder"], CIFAR10_TEST_BATCHES)
    return DatasetSampler(
        "cifar10", train, to_unit_range(test, generator), generator, to_unit_range
    )


def _image_folder_sampler(spec: Mapping[str, Any], generator: torch.Generator) -> DatasetSampler:
    """An image folder at `size`² (`folder`), with an optional `test_folder` (else no test set)."""
    options = _options(spec, {"folder": None, "size": None, "test_folder": ""})
    train, _, classes = read_image_folder(options["folder"], options["size"])
    size = options["size"]
    test = torch.empty((0, 3, size, size), dtype=torch.uint8)
    if options["test_folder"]:
        test, _, test_classes = read_image_folder(options["test_folder"], size)
        if test_classes != classes:
            raise ValueError(
                f"{options['test_folder']}: class folders differ from those of {options['folder']}"
            )
    return DatasetSampler(
        "image_folder", train, to_unit_range(test, generator), generator, to_unit_range
    )


DATASETS: dict[str, Callable[[Mapping[str, Any], torch.Generator], DatasetSampler]] = {
    "8gauss": _toy_sampler("8gauss", eight_gaussians, {"radius": 4.0, "std": 0.15}),
    "checker": _toy_sampler("checker", checkerboard, {"cells": 4, "half_width": 4.0}),
    "digits": _digits_sampler,
    "cifar10": _cifar10_sampler,
    "image_folder": _image_folder_sampler,
}
"""Dataset kind → builder of its `DatasetSampler` from a spec and a generator."""


def dataset_sampler(spec: Mapping[str, Any], generator: torch.Generator) -> DatasetSampler:
    """The `DatasetSampler` of `spec` (a mapping with `kind`, a key of `DATASETS`, and that
    kind's options), its random draws taken from `generator` in a fixed order.

    Options, with defaults: 8gauss `train_size` 20000, `test_size` 10000, `radius` 4.0, `std`
    0.15; checker the sizes, `cells` 4, `half_width` 4.0; digits `train_size` 1500, `split_seed`
    0; cifar10 `folder`; image_folder `folder`, `size`, `test_folder` ("" for none). Raises
    ValueError for an unknown kind, an unknown option or a missing required one.
    """
    kind = spec.get("kind")
    if kind not in DATASETS:
        raise ValueError(f"unknown dataset kind {kind!r}; known: {', '.join(DATASETS)}")
    return DATASETS[kind](spec, generator)
