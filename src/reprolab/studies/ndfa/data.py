"""Datasets for the study, all returned as one `Split` of standardised numpy arrays.

* ``digits``: sklearn's 8x8 digits, stratified train/test split drawn from the seed, (N, 1, 8, 8).
* ``teacher``: Gaussian inputs labelled by the argmax of a fixed random tanh teacher network.
  The teacher is fixed by ``teacher_seed`` (it *is* the task); the seed only redraws the samples.
* ``cifar10`` / ``cifar100`` / ``svhn``: the official train/test sets read from ``root`` in
  their real formats (see `formats`); the seed does not change them.

Inputs are standardised with training-set statistics only (per feature for vectors, per pixel
for digits, per channel for images). The split is a pure function of (task, seed).

`validation_split` carves a validation set out of a split's training part (the ndfa_tune jobs
score on it, never on the test set) and standardises again with the statistics of what is left.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.studies.ndfa.formats import load_cifar, load_svhn


@dataclass
class Split:
    """One train/test split: float32 inputs, int64 labels, class count and per-sample shape."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    input_shape: tuple[int, ...]


def _standardise(x_train: np.ndarray, x_test: np.ndarray, axes: tuple[int, ...]):
    """Centre and scale by training statistics over `axes`; constant features keep scale 1."""
    mean = x_train.mean(axis=axes, keepdims=True)
    std = x_train.std(axis=axes, keepdims=True)
    std = np.where(std > 0, std, 1.0)
    return ((x_train - mean) / std).astype(np.float32), ((x_test - mean) / std).astype(np.float32)


def _digits(task: dict, seed: int) -> Split:
    """sklearn digits, stratified split with `test_fraction`, per-pixel standardisation."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = digits.images.astype(np.float64)[:, None, :, :]
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x,
        y,
        test_size=task["test_fraction"],
        stratify=y,
        random_state=derive_seed(seed, "ndfa", "digits-split"),
    )
    x_tr, x_te = _standardise(x_tr, x_te, axes=(0,))
    return Split(x_tr, y_tr, x_te, y_te, 10, (1, 8, 8))


def teacher_labels(task: dict, x: np.ndarray) -> np.ndarray:
    """Label inputs by the argmax of the fixed random teacher named by the task.

    The teacher is an MLP with widths ``teacher_hidden``, tanh units and weights
    N(0, teacher_gain² / fan_in); a larger gain makes the labelling function more nonlinear.
    """
    rng = np.random.default_rng(derive_seed(task["teacher_seed"], "ndfa", "teacher"))
    widths = [x.shape[1], *task["teacher_hidden"], task["n_classes"]]
    h = x
    for i, (n_in, n_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        w = rng.standard_normal((n_in, n_out)) * task["teacher_gain"] / np.sqrt(n_in)
        h = h @ w
        if i < len(widths) - 2:
            h = np.tanh(h)
    return h.argmax(axis=1).astype(np.int64)


def _teacher(task: dict, seed: int) -> Split:
    """Gaussian inputs (``n_features``) labelled by the teacher; seed redraws the samples."""
    rng = np.random.default_rng(derive_seed(seed, "ndfa", "teacher-inputs"))
    n_train, n_test = task["n_train"], task["n_test"]
    x = rng.standard_normal((n_train + n_test, task["n_features"]))
    y = teacher_labels(task, x)
    x_tr, x_te = _standardise(x[:n_train], x[n_train:], axes=(0,))
    return Split(x_tr, y[:n_train], x_te, y[n_train:], task["n_classes"], (task["n_features"],))


def _images(task: dict, seed: int) -> Split:
    """CIFAR-10/100 or SVHN from ``root``, per-channel standardisation."""
    name = task["dataset"]
    if name == "svhn":
        x_tr, y_tr, x_te, y_te = load_svhn(task["root"])
    else:
        x_tr, y_tr, x_te, y_te = load_cifar(task["root"], name)
    x_tr, x_te = _standardise(
        x_tr.astype(np.float32) / 255, x_te.astype(np.float32) / 255, (0, 2, 3)
    )
    n_classes = 100 if name == "cifar100" else 10
    return Split(x_tr, y_tr, x_te, y_te, n_classes, (3, 32, 32))


STANDARDISE_AXES = {
    "digits": (0,),
    "teacher": (0,),
    "cifar10": (0, 2, 3),
    "cifar100": (0, 2, 3),
    "svhn": (0, 2, 3),
}
"""The axes each dataset's standardisation averages over (per pixel, feature or channel)."""


def validation_split(task: dict, split: Split, fraction: float, seed: int) -> Split:
    """A split whose test part is a random `fraction` of `split`'s training part, drawn from
    `seed`, and whose training part is the rest; the test part of `split` is not used.

    Inputs are standardised again with the statistics of the remaining training part, so
    nothing about the validation samples reaches training. Standardising twice over the same
    axes equals standardising once with the second statistics, so this is what `load_task`
    would give had it held the validation samples out from the start.
    """
    n = len(split.X_train)
    n_val = int(round(fraction * n))
    if not 0 < n_val < n:
        raise ValueError(
            f"validation fraction {fraction} of {n} training samples leaves a part empty"
        )
    order = np.random.default_rng(derive_seed(seed, "ndfa", "validation")).permutation(n)
    val, fit = np.sort(order[:n_val]), np.sort(order[n_val:])
    x_fit, x_val = _standardise(
        split.X_train[fit].astype(np.float64),
        split.X_train[val].astype(np.float64),
        STANDARDISE_AXES[task["dataset"]],
    )
    return Split(
        x_fit, split.y_train[fit], x_val, split.y_train[val], split.n_classes, split.input_shape
    )


LOADERS = {
    "digits": _digits,
    "teacher": _teacher,
    "cifar10": _images,
    "cifar100": _images,
    "svhn": _images,
}


def load_task(task: dict, seed: int) -> Split:
    """Return the split for ``task["dataset"]`` at this seed (a pure function of both)."""
    return LOADERS[task["dataset"]](task, seed)
