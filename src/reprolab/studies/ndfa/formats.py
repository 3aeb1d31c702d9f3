"""Readers for the real on-disk formats of the paper-scale datasets.

CIFAR-10/100 ship as python pickles (``data_batch_1`` .. ``data_batch_5`` and ``test_batch`` for
CIFAR-10; ``train`` and ``test`` for CIFAR-100), each a dict with ``b"data"`` (uint8, N x 3072,
channel-major 3x32x32) and ``b"labels"`` (CIFAR-10) or ``b"fine_labels"`` (CIFAR-100). SVHN ships
as MATLAB files (``train_32x32.mat``, ``test_32x32.mat``) with ``X`` (32, 32, 3, N) uint8 and ``y``
(N, 1) where the digit 0 is stored as label 10.

The CIFAR pickles are read by `CifarUnpickler`, which builds only what those files hold (the
dict, lists, byte strings and ints need no import; the numpy arrays need the few numpy
globals of `CIFAR_GLOBALS`) and refuses any other global, so a crafted file cannot run code
when it is loaded.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

CIFAR_FILES: dict[str, tuple[list[str], str, bytes]] = {
    "cifar10": ([f"data_batch_{i}" for i in range(1, 6)], "test_batch", b"labels"),
    "cifar100": (["train"], "test", b"fine_labels"),
}
"""Per CIFAR variant: its training pickles, its test pickle and the key of its labels."""

SVHN_FILES = ("train_32x32.mat", "test_32x32.mat")
"""SVHN's official train and test splits (the cropped-digits format)."""


CIFAR_GLOBALS = frozenset(
    {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy._core.numeric", "_frombuffer"),
    }
)
"""The (module, name) globals a CIFAR pickle may import: those numpy pickles an array with.
The original files (Python 2, numpy 1) use `numpy.core.multiarray._reconstruct`, `ndarray` and
`dtype`; numpy 2 writes `numpy._core` instead, and at pickle protocol 5 (Python 3.14's default)
`_frombuffer` in place of the first two. Each only builds an array from bytes."""


class CifarUnpickler(pickle.Unpickler):
    """An unpickler that imports only `CIFAR_GLOBALS`, decoding Python 2 strings as bytes (the
    original files' keys are Python 2 strings: ``b"data"``, ``b"labels"``)."""

    def __init__(self, fh: BinaryIO, path: Path) -> None:
        super().__init__(fh, encoding="bytes")
        self.path = path

    def find_class(self, module: str, name: str) -> Any:
        """The global `module.name` when a CIFAR batch may hold it; UnpicklingError naming the
        file and the global otherwise (a crafted pickle would call it while loading)."""
        if (module, name) not in CIFAR_GLOBALS:
            raise pickle.UnpicklingError(
                f"{self.path}: refused to load the global {module}.{name}: a CIFAR batch holds "
                "only a dict of numpy arrays, lists, byte strings and ints (a crafted or "
                "foreign pickle?)"
            )
        return super().find_class(module, name)


def read_cifar_pickle(path: Path, keys: tuple[bytes, ...]) -> dict[bytes, Any]:
    """A CIFAR pickle (`CifarUnpickler`) as its dict, checked to hold `keys`: FileNotFoundError
    or ValueError naming the file (and the keys missing and found) otherwise."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (a CIFAR python pickle was expected)")
    with path.open("rb") as fh:
        batch = CifarUnpickler(fh, path).load()
    if not isinstance(batch, dict):
        raise ValueError(f"{path}: a CIFAR pickle holds a dict, found {type(batch).__name__}")
    missing = [key for key in keys if key not in batch]
    if missing:
        raise ValueError(f"{path}: missing key(s) {missing}; keys found: {sorted(batch)}")
    return batch


def _read_cifar_pickle(path: Path, label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Read one CIFAR pickle into (N, 3, 32, 32) uint8 images and int64 labels."""
    batch = read_cifar_pickle(path, (b"data", label_key))
    data = np.asarray(batch[b"data"])
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise ValueError(f"{path}: b'data' must be an array [N, 3072], found shape {data.shape}")
    images = data.astype(np.uint8).reshape(-1, 3, 32, 32)
    labels = np.asarray(batch[label_key], dtype=np.int64)
    if len(labels) != len(images):
        raise ValueError(f"{path}: {len(images)} images but {len(labels)} labels")
    return images, labels


def load_cifar(
    folder: str | Path, variant: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Load CIFAR-10 or CIFAR-100 from the extracted python-pickle folder.

    `variant` is ``"cifar10"`` or ``"cifar100"``; returns uint8 images (N, 3, 32, 32) and int64
    labels for the official train and test sets, train batches concatenated in file order.
    """
    train_names, test_name, label_key = CIFAR_FILES[variant]
    folder = Path(folder)
    parts = [_read_cifar_pickle(folder / name, label_key) for name in train_names]
    x_train = np.concatenate([p[0] for p in parts])
    y_train = np.concatenate([p[1] for p in parts])
    x_test, y_test = _read_cifar_pickle(folder / test_name, label_key)
    return x_train, y_train, x_test, y_test


def _read_svhn_mat(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Read one SVHN .mat file into (N, 3, 32, 32) uint8 images and labels in 0..9."""
    from scipy.io import loadmat

    mat = loadmat(str(path))
    images = np.ascontiguousarray(np.transpose(mat["X"], (3, 2, 0, 1))).astype(np.uint8)
    labels = np.asarray(mat["y"], dtype=np.int64).reshape(-1) % 10
    return images, labels


def load_svhn(folder: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Load SVHN's official train and test splits from ``train_32x32.mat``/``test_32x32.mat``."""
    folder = Path(folder)
    train_name, test_name = SVHN_FILES
    x_train, y_train = _read_svhn_mat(folder / train_name)
    x_test, y_test = _read_svhn_mat(folder / test_name)
    return x_train, y_train, x_test, y_test
