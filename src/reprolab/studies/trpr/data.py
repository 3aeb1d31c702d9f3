"""DigitStyles: trpr's class-incremental image stream, where task identity is ambiguous.

Images are scikit-learn's 8×8 handwritten digits (bundled with the library: real strokes, no
download), doubled to 16×16 and drawn in one of several styles (`STYLES`: plain, inverted,
striped, on a checkerboard, ...). A class is a (digit, style) pair, and every pair is a
class. A stream's tasks are the classes in a random order cut into equal tasks, one order per
seed (`task_order`: the class-incremental protocol), so every digit and every style appears
in several tasks: neither what a digit looks like nor its style tells which task an image
belongs to, and a class anchor chosen from frozen features is not an oracle of task identity
(the design card's prototype found it was at its own separation).

The images are made once (`build_images`, the `trpr_data` job) from `trpr.data.seed`; only the
class order depends on the run's seed. The digit images are split three ways, so no stroke is
seen twice across the splits:
* `pretrain`: the backbone's pre-training set, every image in every style, labelled by digit (a
  backbone that knows digits; the styles the stream tells apart are for the adapters to learn);
* `train`, `test`: each class's training and test images.

Every image gets its own random shift (±`shift` pixels, wrapping) and Gaussian pixel noise
(`noise`); values are float32 in [0, 1]. Everything is drawn from one numpy generator of
`trpr.data.seed`, in a fixed order, so the same spec gives the same arrays.

The paper's benchmarks (studies.trpr.benchmarks) become the same `Stream` from their own
train and test images.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    """The DigitStyles images (params `trpr.data`)."""

    seed: int
    styles: tuple[str, ...]
    split: tuple[float, float, float]
    shift: int
    noise: float

    @classmethod
    def from_params(cls, values: Mapping[str, Any]) -> StreamSpec:
        spec = cls(
            seed=int(values["seed"]),
            styles=tuple(values["styles"]),
            split=tuple(float(v) for v in values["split"]),
            shift=int(values["shift"]),
            noise=float(values["noise"]),
        )
        spec.check()
        return spec

    def check(self) -> None:
        """ValueError naming the key when the spec cannot make the images."""
        unknown = [style for style in self.styles if style not in STYLES]
        if unknown:
            raise ValueError(f"trpr.data.styles: {unknown} unknown (known: {sorted(STYLES)})")
        if len(self.split) != 3 or abs(sum(self.split) - 1.0) > 1e-9:
            raise ValueError(f"trpr.data.split: {list(self.split)} must be 3 shares summing to 1")


@dataclass(frozen=True)
class Stream:
    """A class-incremental stream: images [N, H, W] (DigitStyles, float32 in [0, 1]) or
    [N, H, W, 3] (the paper's benchmarks, uint8), labels indexing `class_names`, and
    `task_classes` [T, K], the classes of each task in the order they arrive."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    class_names: tuple[str, ...]
    task_classes: np.ndarray


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


def class_names(styles: Sequence[str]) -> list[str]:
    """DigitStyles' class names, `<digit>/<style>`, digit-major: label = digit × styles + style."""
    return [f"{digit}/{style}" for digit in range(10) for style in styles]


def build_images(spec: StreamSpec) -> dict[str, np.ndarray]:
    """Every DigitStyles image of `spec` (module docstring), as the arrays the data job writes:
    `pretrain_images`, `pretrain_digits`, `train_images`, `train_labels`, `test_images`,
    `test_labels` (labels index `class_names(spec.styles)`)."""
    spec.check()
    rng = np.random.default_rng(spec.seed)
    images, digits = digit_images()
    order = rng.permutation(len(digits))
    cuts = np.cumsum(np.array(spec.split[:2]) * len(order)).astype(int)
    pretrain, train, test = np.split(order, cuts)
    pretrain_images = [
        _draw(images[i], style, spec, rng) for style in spec.styles for i in pretrain
    ]

    def class_images(pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        made, labels = [], []
        for digit in range(10):
            for style_index, style in enumerate(spec.styles):
                for index in pool[digits[pool] == digit]:
                    made.append(_draw(images[index], style, spec, rng))
                    labels.append(digit * len(spec.styles) + style_index)
        return np.stack(made).astype(np.float32), np.array(labels, dtype=np.int64)

    train_images, train_labels = class_images(train)
    test_images, test_labels = class_images(test)
    return {
        "pretrain_images": np.stack(pretrain_images).astype(np.float32),
        "pretrain_digits": np.tile(digits[pretrain], len(spec.styles)),
        "train_images": train_images,
        "train_labels": train_labels,
        "test_images": test_images,
        "test_labels": test_labels,
    }


def task_order(classes: int, tasks: int, seed: int) -> np.ndarray:
    """[T, classes / T] the classes of each task: a random order of all `classes` drawn from
    `seed` (the class-incremental protocol: one class order per seed), cut into `tasks`
    equal tasks. ValueError when `tasks` does not divide `classes`."""
    if tasks < 2 or classes % tasks:
        raise ValueError(
            f"trpr.stream.tasks: {tasks} tasks must be 2 or more and divide the {classes} classes"
        )
    return np.random.default_rng(seed).permutation(classes).reshape(tasks, classes // tasks)


def make_stream(
    arrays: Mapping[str, np.ndarray], names: Sequence[str], tasks: int, seed: int
) -> Stream:
    """The stream of a seed: the data job's `arrays` (train and test images and labels) with
    the class order of `task_order(len(names), tasks, seed)`."""
    return Stream(
        train_images=arrays["train_images"],
        train_labels=arrays["train_labels"],
        test_images=arrays["test_images"],
        test_labels=arrays["test_labels"],
        class_names=tuple(names),
        task_classes=task_order(len(names), tasks, seed),
    )


def validation_stream(stream: Stream, fraction: float, seed: int) -> Stream:
    """The tuning jobs' stream: each class's training images less a held-out `fraction`
    (drawn from `seed`), which become the test images; the test split is never read."""
    rng = np.random.default_rng(seed)
    held = np.zeros(len(stream.train_labels), dtype=bool)
    for label in np.unique(stream.train_labels):
        mine = np.flatnonzero(stream.train_labels == label)
        count = max(1, int(round(fraction * len(mine))))
        held[rng.permutation(mine)[:count]] = True
    return Stream(
        train_images=stream.train_images[~held],
        train_labels=stream.train_labels[~held],
        test_images=stream.train_images[held],
        test_labels=stream.train_labels[held],
        class_names=stream.class_names,
        task_classes=stream.task_classes,
    )
