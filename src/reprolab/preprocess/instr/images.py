"""Image references of instruction records: resolve them, check them, load them as uint8 arrays.

A record names its images in one of two ways:

- `h5:FILE#/DATASET/INDEX` (e.g. `h5:synthcit.h5#/images/123`): image INDEX along the first
  axis of an HDF5 dataset of shape [N, H, W] or [N, H, W, 3], uint8. FILE is absolute or
  relative to the folder of the record file (the generator's task files, one folder down, write
  `h5:../synthcit.h5#/images/i`).
- a path to a png/jpg file, absolute or relative to an image root folder (the record file's
  folder unless one is given): CoIN and LLaVA records hold paths like
  `COCO2014/train2014/xyz.jpg` relative to a dataset root.

`parse_ref` turns the text into an `ImageRef` with an absolute path (normalised lexically, so
symlinked data folders keep the names the user gave); `str(ref)` is an absolute reference that
parses back to the same image from any folder. `ImageLoader` checks (`problem`) and loads
(`load`, `load_many`) references. It keeps the HDF5 files it opened until `close` (it is a
context manager) and reads many indices of one dataset with one sorted fancy-indexed read.
Files are decoded with OpenCV (PIL is not a dependency) and returned as RGB (H×W×3) or gray
(H×W); a 16-bit or alpha image is brought to 8-bit RGB by OpenCV's IMREAD_COLOR/ANYCOLOR rules.
Checking a file reference only tests that the file exists (decoding every image of a real
benchmark would take longer than the training); `load` names the file it cannot decode.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

H5_PREFIX = "h5:"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


@dataclass(frozen=True)
class ImageRef:
    """One resolved image reference: `text` as written, `path` absolute; h5 adds dataset/index."""

    text: str
    path: Path
    dataset: str | None = None
    index: int | None = None

    @property
    def is_h5(self) -> bool:
        """Whether the image is a row of an HDF5 dataset (else an image file)."""
        return self.dataset is not None

    def __str__(self) -> str:
        if self.is_h5:
            return f"{H5_PREFIX}{self.path}#{self.dataset}/{self.index}"
        return str(self.path)


def _absolute(folder: Path, name: str) -> Path:
    return Path(os.path.abspath(folder / name))


def parse_ref(text: str, base_dir: str | Path, image_root: str | Path | None = None) -> ImageRef:
    """Resolve `text`: h5 files against `base_dir`, image files against `image_root` (default
    `base_dir`). Raises ValueError for a malformed h5 reference or a wrong file extension."""
    if text.startswith(H5_PREFIX):
        file, sep, fragment = text[len(H5_PREFIX) :].rpartition("#")
        dataset, _, index = fragment.rpartition("/")
        if not (sep and file and dataset.startswith("/") and len(dataset) > 1 and index.isdigit()):
            raise ValueError(f"image '{text}' is not of the form h5:FILE#/DATASET/INDEX")
        return ImageRef(text, _absolute(Path(base_dir), file), dataset, int(index))
    if Path(text).suffix.lower() not in IMAGE_SUFFIXES:
        raise ValueError(
            f"image '{text}' is neither h5:FILE#/DATASET/INDEX nor a file ending in "
            + ", ".join(IMAGE_SUFFIXES)
        )
    return ImageRef(text, _absolute(Path(image_root if image_root is not None else base_dir), text))


def lies_within(path: Path, roots: Sequence[Path]) -> bool:
    """Whether `path` is one of `roots` or below one, compared after lexical normalisation (as
    `parse_ref` resolves), so `..` cannot climb out while a symlink placed inside a root (a
    data folder linked into a stream) still counts as inside."""
    normal = Path(os.path.abspath(path))
    return any(normal.is_relative_to(os.path.abspath(root)) for root in roots)


def confined(ref: ImageRef, roots: Sequence[Path] | None) -> ImageRef:
    """`ref` when `roots` is None or its file lies within one of `roots`; ValueError naming the
    reference otherwise (a stream's records may not point outside the stream's folder)."""
    if roots is not None and not lies_within(ref.path, roots):
        folders = ", ".join(str(root) for root in roots)
        raise ValueError(f"image '{ref.text}' lies outside the stream's folder ({folders})")
    return ref


def _decode(path: Path) -> np.ndarray:
    import cv2

    image = cv2.imread(str(path), cv2.IMREAD_ANYCOLOR)
    if image is None:
        raise ValueError(f"image file {path} cannot be decoded (is it a png or jpg?)")
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    return np.ascontiguousarray(image, dtype=np.uint8)


class ImageLoader:
    """Checks and loads image references, keeping the HDF5 files it opened until `close`."""

    def __init__(self) -> None:
        self._files: dict[Path, Any] = {}
        self._datasets: dict[tuple[Path, str], tuple[int, ...] | str] = {}

    def __enter__(self) -> ImageLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every HDF5 file this loader opened."""
        for handle in self._files.values():
            handle.close()
        self._files.clear()
        self._datasets.clear()

    def _file(self, path: Path) -> Any:
        import h5py

        if path not in self._files:
            self._files[path] = h5py.File(path, "r")
        return self._files[path]

    def _dataset_shape(self, path: Path, dataset: str) -> tuple[int, ...] | str:
        """The dataset's shape, or a message saying why it holds no images (cached)."""
        key = (path, dataset)
        if key not in self._datasets:
            self._datasets[key] = self._inspect(path, dataset)
        return self._datasets[key]

    def _inspect(self, path: Path, dataset: str) -> tuple[int, ...] | str:
        import h5py

        if not path.is_file():
            return f"file {path} does not exist"
        if not h5py.is_hdf5(path):
            return f"{path} is not an HDF5 file"
        node = self._file(path).get(dataset)
        if not isinstance(node, h5py.Dataset):
            return f"no dataset '{dataset}' in {path}"
        if node.dtype != np.uint8:
            return f"dataset '{dataset}' in {path} is {node.dtype}, expected uint8"
        if not (node.ndim == 3 or (node.ndim == 4 and node.shape[3] == 3)):
            return (
                f"dataset '{dataset}' in {path} has shape {node.shape}, "
                "expected [N, H, W] or [N, H, W, 3]"
            )
        return tuple(node.shape)

    def problem(self, ref: ImageRef) -> str | None:
        """What is wrong with `ref` (missing file, dataset or index), or None when it exists."""
        if not ref.is_h5:
            if ref.path.is_file():
                return None
            return f"image '{ref.text}' does not exist (looked in {ref.path.parent})"
        shape = self._dataset_shape(ref.path, ref.dataset)
        if isinstance(shape, str):
            return f"image '{ref.text}': {shape}"
        if ref.index >= shape[0]:
            return (
                f"image '{ref.text}': index {ref.index} out of range, dataset '{ref.dataset}' "
                f"holds {shape[0]} images"
            )
        return None

    def _checked(self, ref: ImageRef | str) -> ImageRef:
        if isinstance(ref, str):
            ref = parse_ref(ref, Path.cwd())
        problem = self.problem(ref)
        if problem is not None:
            raise ValueError(problem)
        return ref

    def load(self, ref: ImageRef | str) -> np.ndarray:
        """The image as uint8 H×W or H×W×3 (RGB); a string is parsed against the working folder
        (records from `load_records` hold absolute references). ValueError when it is missing."""
        ref = self._checked(ref)
        if ref.is_h5:
            return self._file(ref.path)[ref.dataset][ref.index]
        return _decode(ref.path)

    def read_h5(self, path: str | Path, dataset: str, indices: Sequence[int]) -> np.ndarray:
        """Rows `indices` (any order, repeats allowed) of one HDF5 dataset, in one sorted read."""
        path = Path(os.path.abspath(path))
        shape = self._dataset_shape(path, dataset)
        if isinstance(shape, str):
            raise ValueError(shape)
        wanted = np.asarray(indices, dtype=np.int64)
        if wanted.size and (wanted.min() < 0 or wanted.max() >= shape[0]):
            raise ValueError(
                f"indices of dataset '{dataset}' in {path} must lie in [0, {shape[0]}), "
                f"got {wanted.min()}..{wanted.max()}"
            )
        unique, inverse = np.unique(wanted, return_inverse=True)
        if not unique.size:
            return np.zeros((0, *shape[1:]), dtype=np.uint8)
        return self._file(path)[dataset][unique][inverse]

    def load_many(self, refs: Iterable[ImageRef | str]) -> list[np.ndarray]:
        """Every image of `refs`, in order; h5 rows of one dataset are read together."""
        refs = [self._checked(ref) for ref in refs]
        images: list[np.ndarray | None] = [None] * len(refs)
        groups: dict[tuple[Path, str], list[int]] = {}
        for position, ref in enumerate(refs):
            if ref.is_h5:
                groups.setdefault((ref.path, ref.dataset), []).append(position)
            else:
                images[position] = _decode(ref.path)
        for (path, dataset), positions in groups.items():
            rows = self.read_h5(path, dataset, [refs[p].index for p in positions])
            for position, row in zip(positions, rows, strict=True):
                images[position] = row
        return images  # type: ignore[return-value]
