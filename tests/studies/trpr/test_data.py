"""DigitStyles: disjoint image splits, every (digit, style) a class, per-seed class orders whose
tasks share digits and styles, and validation streams cut from the training images."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.trpr.data import (
    STYLES,
    StreamSpec,
    build_images,
    class_names,
    digit_images,
    make_stream,
    task_order,
    validation_stream,
)

SPEC = {
    "seed": 3,
    "styles": ["plain", "invert", "stripes", "checker"],
    "split": [0.5, 0.32, 0.18],
    "shift": 1,
    "noise": 0.08,
}
STYLES_USED = len(SPEC["styles"])


@pytest.fixture(scope="module")
def images():
    return build_images(StreamSpec.from_params(SPEC))


def test_the_same_spec_gives_the_same_arrays(images):
    again = build_images(StreamSpec.from_params(SPEC))
    for name, values in images.items():
        assert np.array_equal(values, again[name]), name


def test_every_digit_style_pair_is_a_class_with_training_and_test_images(images):
    names = class_names(SPEC["styles"])
    assert len(names) == 10 * STYLES_USED and names[STYLES_USED + 1] == "1/invert"
    for split in ("train_labels", "test_labels"):
        assert set(np.unique(images[split])) == set(range(len(names)))


def test_a_seeds_tasks_cut_a_class_order_and_share_digits_and_styles(images):
    tasks = task_order(10 * STYLES_USED, 5, seed=7)
    assert tasks.shape == (5, 8) and sorted(tasks.ravel()) == list(range(40))
    assert np.array_equal(tasks, task_order(40, 5, seed=7))
    assert not np.array_equal(tasks, task_order(40, 5, seed=8))
    digits_per_task = [set(t // STYLES_USED) for t in tasks]
    styles_per_task = [set(t % STYLES_USED) for t in tasks]
    # every task holds several digits and styles, and no digit belongs to one task only
    assert all(len(d) > 1 for d in digits_per_task) and all(len(s) > 1 for s in styles_per_task)
    for digit in range(10):
        assert sum(digit in d for d in digits_per_task) > 1
    with pytest.raises(ValueError, match="trpr.stream.tasks: 3 tasks"):
        task_order(40, 3, seed=7)


def test_images_are_in_range_and_the_splits_hold_the_right_counts(images):
    total = len(digit_images()[1])
    for name in ("pretrain_images", "train_images", "test_images"):
        assert images[name].dtype == np.float32 and images[name].shape[1:] == (16, 16)
        assert images[name].min() >= 0.0 and images[name].max() <= 1.0
    assert len(images["pretrain_images"]) == STYLES_USED * int(0.5 * total)
    assert set(np.unique(images["pretrain_digits"])) == set(range(10))
    assert len(images["train_images"]) > len(images["test_images"]) > 0


def test_a_validation_stream_holds_out_training_images_and_never_reads_the_test_split(images):
    stream = make_stream(images, class_names(SPEC["styles"]), 5, seed=1)
    held = validation_stream(stream, 0.25, seed=2)
    assert len(held.train_labels) + len(held.test_labels) == len(stream.train_labels)
    assert set(np.unique(held.test_labels)) == set(range(40))
    training = {row.tobytes() for row in stream.train_images}
    assert all(image.tobytes() in training for image in held.test_images)
    assert np.array_equal(held.task_classes, stream.task_classes)


def test_styles_draw_distinct_images():
    image = digit_images()[0][0]
    drawn = {name: style(image) for name, style in STYLES.items()}
    names = list(drawn)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not np.allclose(drawn[a], drawn[b]), (a, b)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"styles": ["plain", "sepia"]}, r"trpr.data.styles: \['sepia'\] unknown"),
        ({"split": [0.5, 0.5, 0.5]}, r"trpr.data.split"),
    ],
)
def test_a_spec_that_cannot_make_the_images_is_refused_naming_the_key(change, message):
    with pytest.raises(ValueError, match=message):
        StreamSpec.from_params({**SPEC, **change})
