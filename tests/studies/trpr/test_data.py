"""The DigitStyles stream: disjoint image splits, tasks that share digits and styles, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.trpr.data import STYLES, StreamSpec, build_stream, digit_images

SPEC = {
    "seed": 3,
    "styles": ["plain", "invert", "stripes", "checker"],
    "tasks": 5,
    "classes_per_task": 8,
    "split": [0.5, 0.32, 0.18],
    "shift": 1,
    "noise": 0.08,
}


@pytest.fixture(scope="module")
def stream():
    return build_stream(StreamSpec.from_params(SPEC))


def test_the_same_spec_gives_the_same_arrays_and_another_seed_others(stream):
    again = build_stream(StreamSpec.from_params(SPEC))
    for name, values in stream.arrays().items():
        assert np.array_equal(values, again.arrays()[name]), name
    other = build_stream(StreamSpec.from_params({**SPEC, "seed": 4}))
    assert not np.array_equal(other.task_classes, stream.task_classes)


def test_tasks_are_disjoint_and_share_digits_and_styles(stream):
    tasks = stream.task_classes
    assert tasks.shape == (5, 8) and len(np.unique(tasks)) == 40
    digits_per_task = [set(stream.classes[t][:, 0]) for t in tasks]
    styles_per_task = [set(stream.classes[t][:, 1]) for t in tasks]
    # every task holds several digits and styles, and no digit or style belongs to one task only
    assert all(len(d) > 1 for d in digits_per_task) and all(len(s) > 1 for s in styles_per_task)
    for digit in range(10):
        assert sum(digit in d for d in digits_per_task) > 1
    assert set(np.unique(stream.train_labels)) == set(tasks.ravel())
    assert set(np.unique(stream.test_labels)) == set(tasks.ravel())


def test_images_are_in_range_and_the_splits_hold_the_right_counts(stream):
    total = len(digit_images()[1])
    for images in (stream.pretrain_images, stream.train_images, stream.test_images):
        assert images.dtype == np.float32 and images.shape[1:] == (16, 16)
        assert images.min() >= 0.0 and images.max() <= 1.0
    assert len(stream.pretrain_images) == 4 * int(0.5 * total)
    assert set(np.unique(stream.pretrain_digits)) == set(range(10))
    assert len(stream.train_images) > len(stream.test_images) > 0


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
        ({"tasks": 11}, r"11 tasks × 8 classes exceed the 40"),
        ({"split": [0.5, 0.5, 0.5]}, r"trpr.data.split"),
    ],
)
def test_a_spec_that_cannot_make_a_stream_is_refused_naming_the_key(change, message):
    with pytest.raises(ValueError, match=message):
        StreamSpec.from_params({**SPEC, **change})
