"""DigitStyles: trpr's class-incremental image stream, where task identity is ambiguous.

Images are scikit-learn's 8×8 handwritten digits (bundled with the library: real strokes, no
download), doubled to 16×16 and drawn in one of several styles (`STYLES`: plain, inverted,
striped, on a checkerboard, ...). A class is a (digit, style) pair. The stream's tasks are
disjoint sets of classes drawn at random, so every digit and every style appears in several
tasks: neither what a digit looks like nor its style tells which task an image belongs to, and a
class anchor chosen from frozen features is not an oracle of task identity (the design card's
prototype found it was at its own separation).

The digit images are split three ways before any class is drawn, so no stroke is seen twice
across the splits:
* `pretrain`: the backbone's pre-training set, every image in every style, labelled by digit (a
  backbone that knows digits; the styles the stream tells apart are for the adapters to learn);
* `train`, `test`: each class's training and test images.

Every image gets its own random shift (±`shift` pixels, wrapping) and Gaussian pixel noise
(`noise`); values are float32 in [0, 1]. Everything is drawn from one numpy generator of
`seed`, in a fixed order, so the same spec gives the same arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

SIZE = 16


def _stripes(image: np.ndarray) -> np.ndarray:
    rows = (np.arange(SIZE)[:, None] % 4) < 2
    return image * np.where(rows, 1.0, 0.35)


def _checker(image: np.ndarray) -> np.ndarray:
    cells = (np.arange(SIZE)[:, None] // 2 + np.arange(SIZE)[None] // 2) % 2
    return np.clip(image + 0.5 * cells, 0.0, 1.0)


def _columns(image: np.ndarray) -> np.ndarray:
    columns = (np.arange(SIZE)[None] % 4) < 2
    return image * np.where(columns, 1.0, 0.35)


def _frame(image: np.ndarray) -> np.ndarray:
    framed = image.copy()
    framed[[0, -1], :] = 1.0
    framed[:, [0, -1]] = 1.0
    return framed


STYLES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "plain": lambda image: image,
    "invert": lambda image: 1.0 - image,
    "stripes": _stripes,
    "checker": _checker,
    "columns": _columns,
    "frame": _frame,
}
"""How a style draws a 16×16 digit image in [0, 1]."""


@dataclass(frozen=True)
class StreamSpec:
    """A DigitStyles stream (params `trpr.data`)."""

    seed: int
    styles: tuple[str, ...]
    tasks: int
    classes_per_task: int
    split: tuple[float, float, float]
    shift: int
    noise: float

    @classmethod
    def from_params(cls, values: Mapping[str, Any]) -> StreamSpec:
        spec = cls(
            seed=int(values["seed"]),
            styles=tuple(values["styles"]),
            tasks=int(values["tasks"]),
            classes_per_task=int(values["classes_per_task"]),
            split=tuple(float(v) for v in values["split"]),
            shift=int(values["shift"]),
            noise=float(values["noise"]),
        )
        spec.check()
        return spec

    def check(self) -> None:
        """ValueError naming the key when the spec cannot make a stream."""
        unknown = [style for style in self.styles if style not in STYLES]
        if unknown:
            raise ValueError(f"trpr.data.styles: {unknown} unknown (known: {sorted(STYLES)})")
        available = 10 * len(self.styles)
        if self.tasks * self.classes_per_task > available:
            raise ValueError(
                f"trpr.data: {self.tasks} tasks × {self.classes_per_task} classes exceed the "
                f"{available} (digit, style) classes of {len(self.styles)} styles"
            )
        if len(self.split) != 3 or abs(sum(self.split) - 1.0) > 1e-9:
            raise ValueError(f"trpr.data.split: {list(self.split)} must be 3 shares summing to 1")


@dataclass(frozen=True)
class Stream:
    """The arrays of a DigitStyles stream. Images are [N, 16, 16] float32; `classes` [C, 2] is
    each class's (digit, style index); `task_classes` [T, K] the classes of each task in order."""

    pretrain_images: np.ndarray
    pretrain_digits: np.ndarray
    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    classes: np.ndarray
    task_classes: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        """The stream as named arrays (what the data job writes to HDF5)."""
        return dict(self.__dict__)


def digit_images() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 digits as [N, 16, 16] images in [0, 1] (each pixel doubled), and
    their digits."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.kron(digits.images / 16.0, np.ones((2, 2)))
    return images.astype(np.float64), digits.target.astype(np.int64)


def _draw(image: np.ndarray, style: str, spec: StreamSpec, rng: np.random.Generator) -> np.ndarray:
    drawn = STYLES[style](image)
    shift = rng.integers(-spec.shift, spec.shift + 1, size=2)
    drawn = np.roll(drawn, tuple(shift), (0, 1))
    return np.clip(drawn + spec.noise * rng.standard_normal(drawn.shape), 0.0, 1.0)


def build_stream(spec: StreamSpec) -> Stream:
    """The stream of `spec` (module docstring)."""
    spec.check()
    rng = np.random.default_rng(spec.seed)
    images, digits = digit_images()
    order = rng.permutation(len(digits))
    cuts = np.cumsum(np.array(spec.split[:2]) * len(order)).astype(int)
    pretrain, train, test = np.split(order, cuts)
    pretrain_images = [
        _draw(images[i], style, spec, rng) for style in spec.styles for i in pretrain
    ]
    classes = np.array([(d, s) for d in range(10) for s in range(len(spec.styles))])
    drawn = rng.permutation(len(classes))[: spec.tasks * spec.classes_per_task]
    task_classes = drawn.reshape(spec.tasks, spec.classes_per_task)

    def class_images(pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        made, labels = [], []
        for label in np.sort(drawn):
            digit, style = classes[label]
            for index in pool[digits[pool] == digit]:
                made.append(_draw(images[index], spec.styles[style], spec, rng))
                labels.append(label)
        return np.stack(made).astype(np.float32), np.array(labels, dtype=np.int64)

    train_images, train_labels = class_images(train)
    test_images, test_labels = class_images(test)
    return Stream(
        pretrain_images=np.stack(pretrain_images).astype(np.float32),
        pretrain_digits=np.tile(digits[pretrain], len(spec.styles)),
        train_images=train_images,
        train_labels=train_labels,
        test_images=test_images,
        test_labels=test_labels,
        classes=classes,
        task_classes=task_classes,
    )
