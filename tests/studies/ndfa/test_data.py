"""Dataset splits and the real-format loaders (CIFAR pickles, SVHN .mat) on tiny files."""

from __future__ import annotations

import pickle

import numpy as np
from scipy.io import savemat

from reprolab.studies.ndfa.data import load_task

TEACHER = {
    "dataset": "teacher",
    "n_train": 50,
    "n_test": 20,
    "n_features": 5,
    "n_classes": 4,
    "teacher_hidden": [8],
    "teacher_gain": 1.0,
    "teacher_seed": 0,
}


def _write_cifar(path, n: int, label_key: bytes, rng) -> tuple[np.ndarray, list[int]]:
    data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    labels = rng.integers(0, 10, n).tolist()
    with path.open("wb") as fh:
        pickle.dump({b"batch_label": b"x", label_key: labels, b"data": data}, fh)
    return data, labels


def test_digits_split_is_pure_stratified_and_standardised():
    task = {"dataset": "digits", "test_fraction": 0.3}
    a, b, c = load_task(task, 0), load_task(task, 0), load_task(task, 1)
    assert np.array_equal(a.X_train, b.X_train) and np.array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.y_train, c.y_train)
    assert a.X_train.shape[1:] == a.input_shape == (1, 8, 8) and a.X_train.dtype == np.float32
    assert a.y_train.dtype == np.int64 and len(a.y_test) == 540
    totals = np.bincount(np.concatenate([a.y_train, a.y_test]))
    assert np.abs(np.bincount(a.y_test) - 0.3 * totals).max() <= 1
    assert np.allclose(a.X_train.mean(0), 0, atol=1e-5)


def test_teacher_fixed_by_teacher_seed_samples_by_seed():
    a, b = load_task(TEACHER, 0), load_task(TEACHER, 1)
    assert a.X_train.shape == (50, 5) and a.X_test.shape == (20, 5) and a.n_classes == 4
    assert not np.array_equal(a.X_train, b.X_train)
    assert np.array_equal(load_task(TEACHER, 0).y_train, a.y_train)


def test_cifar10_pickle_loader(tmp_path):
    rng = np.random.default_rng(0)
    parts = [_write_cifar(tmp_path / f"data_batch_{i}", 3, b"labels", rng) for i in range(1, 6)]
    test_data, test_labels = _write_cifar(tmp_path / "test_batch", 4, b"labels", rng)
    split = load_task({"dataset": "cifar10", "root": str(tmp_path)}, 0)
    assert split.X_train.shape == (15, 3, 32, 32) and split.X_test.shape == (4, 3, 32, 32)
    assert split.y_train.tolist() == sum((p[1] for p in parts), [])
    assert split.y_test.tolist() == test_labels and split.n_classes == 10
    # channel-major layout: pixel (c, i, j) is byte c*1024 + i*32 + j
    raw = test_data.reshape(-1, 3, 32, 32).astype(np.float64)
    corr = np.corrcoef(raw[:, 1].ravel(), split.X_test[:, 1].ravel())[0, 1]
    assert corr > 0.999


def test_cifar100_pickle_loader(tmp_path):
    rng = np.random.default_rng(1)
    _, train_labels = _write_cifar(tmp_path / "train", 6, b"fine_labels", rng)
    _write_cifar(tmp_path / "test", 2, b"fine_labels", rng)
    split = load_task({"dataset": "cifar100", "root": str(tmp_path)}, 0)
    assert split.y_train.tolist() == train_labels and split.n_classes == 100
    assert split.X_test.shape == (2, 3, 32, 32)


def test_svhn_mat_loader(tmp_path):
    rng = np.random.default_rng(2)
    for name, n in (("train_32x32.mat", 5), ("test_32x32.mat", 3)):
        x = rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)
        y = np.array([[10], [1], [9], [10], [3]][:n], dtype=np.uint8)
        savemat(tmp_path / name, {"X": x, "y": y})
        if name.startswith("train"):
            train_x = x
    split = load_task({"dataset": "svhn", "root": str(tmp_path)}, 0)
    assert split.X_train.shape == (5, 3, 32, 32) and split.X_test.shape == (3, 3, 32, 32)
    assert split.y_train.tolist() == [0, 1, 9, 0, 3] and split.y_test.tolist() == [0, 1, 9]
    raw = np.transpose(train_x, (3, 2, 0, 1)).astype(np.float64)  # X[i, j, c, n] -> (n, c, i, j)
    assert np.corrcoef(raw[:, 2].ravel(), split.X_train[:, 2].ravel())[0, 1] > 0.999
