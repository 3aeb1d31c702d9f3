"""A task's clips: clips.h5 as the video stage writes it, joined with a labels table."""

from __future__ import annotations

import logging
import re

import h5py
import numpy as np
import pandas as pd
import pytest

from reprolab.studies.strap.data import (
    ClipSet,
    class_count,
    load_task,
    read_labels,
    validation_split,
)

FRAMES, SIZE = 3, 4


def write_clips(frames_dir, count: int) -> np.ndarray:
    """clips.h5 with `count` clips whose pixels all equal the clip's index; the clips."""
    frames_dir.mkdir(parents=True, exist_ok=True)
    clips = np.broadcast_to(
        np.arange(count, dtype=np.uint8)[:, None, None, None, None], (count, FRAMES, SIZE, SIZE, 3)
    ).copy()
    names = [f"clip_{i:05d}.mp4".encode() for i in range(count)]
    with h5py.File(frames_dir / "clips.h5", "w") as handle:
        handle.create_dataset("clips", data=clips)
        handle.create_dataset("videos", data=names, dtype=h5py.string_dtype())
    return clips


def write_labels(path, rows: list[tuple]) -> None:
    pd.DataFrame(rows, columns=["video", "split", "label"]).to_csv(path, index=False)


def standard_rows(count: int) -> list[tuple]:
    """Clips 0, 2, 4, ... train, the odd ones test; label = index % 3."""
    return [(f"clip_{i:05d}", "train" if i % 2 == 0 else "test", i % 3) for i in range(count)]


def test_load_task_splits_and_labels(tmp_path):
    write_clips(tmp_path / "frames", 6)
    write_labels(tmp_path / "labels.csv", standard_rows(6))
    task = load_task(tmp_path / "frames", tmp_path / "labels.csv")
    assert set(task) == {"train", "test"}
    train, test = task["train"], task["test"]
    assert train.clips.shape == (3, FRAMES, SIZE, SIZE, 3) and train.clips.dtype == np.uint8
    np.testing.assert_array_equal(train.clips[:, 0, 0, 0, 0], [0, 2, 4])
    np.testing.assert_array_equal(train.labels, [0, 2, 1])
    np.testing.assert_array_equal(test.clips[:, 0, 0, 0, 0], [1, 3, 5])
    np.testing.assert_array_equal(test.labels, [1, 0, 2])
    assert train.labels.dtype == np.int64
    assert len(train) == 3 and class_count(task) == 3


def test_labels_table_order_does_not_matter(tmp_path):
    write_clips(tmp_path / "frames", 6)
    write_labels(tmp_path / "labels.csv", standard_rows(6)[::-1])
    task = load_task(tmp_path / "frames", tmp_path / "labels.csv")
    np.testing.assert_array_equal(task["train"].clips[:, 0, 0, 0, 0], [0, 2, 4])
    np.testing.assert_array_equal(task["train"].labels, [0, 2, 1])


def test_numeric_video_names_stay_strings(tmp_path):
    (tmp_path / "frames").mkdir()
    clips = np.zeros((2, FRAMES, SIZE, SIZE, 3), np.uint8)
    with h5py.File(tmp_path / "frames" / "clips.h5", "w") as handle:
        handle.create_dataset("clips", data=clips)
        handle.create_dataset(
            "videos", data=[b"00012.webm", b"345.webm"], dtype=h5py.string_dtype()
        )
    write_labels(tmp_path / "labels.csv", [("00012", "train", 0), ("345", "test", 1)])
    task = load_task(tmp_path / "frames", tmp_path / "labels.csv")
    assert len(task["train"]) == len(task["test"]) == 1


def test_a_clip_without_a_labels_row_is_an_error(tmp_path):
    write_clips(tmp_path / "frames", 6)
    write_labels(tmp_path / "labels.csv", [r for r in standard_rows(6) if r[0] != "clip_00003"])
    with pytest.raises(ValueError, match=r"'clip_00003' has no row in .*labels\.csv"):
        load_task(tmp_path / "frames", tmp_path / "labels.csv")


def test_a_labels_row_without_a_clip_is_skipped(tmp_path, caplog):
    write_clips(tmp_path / "frames", 4)
    write_labels(tmp_path / "labels.csv", standard_rows(6))  # clips 4 and 5 were not processed
    with caplog.at_level(logging.WARNING):
        task = load_task(tmp_path / "frames", tmp_path / "labels.csv")
    assert len(task["train"]) == 2 and len(task["test"]) == 2
    assert "2 labelled video(s) have no clip" in caplog.text


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ([("clip_00000", "val", 0), ("clip_00001", "test", 1)], r"split values \['val'\]"),
        ([("clip_00000", "train", -1), ("clip_00001", "test", 1)], "non-negative integers"),
        ([("clip_00000", "train", 0.5), ("clip_00001", "test", 1)], "non-negative integers"),
        ([("clip_00000", "train", 0), ("clip_00001", "test", None)], "non-negative integers"),
        (
            [("clip_00000", "train", 0), ("clip_00001", "test", 1), ("clip_00000", "test", 1)],
            "video 'clip_00000' twice",
        ),
    ],
)
def test_a_bad_labels_table_is_refused_naming_the_file(tmp_path, rows, problem):
    path = tmp_path / "labels.csv"
    write_labels(path, rows)
    with pytest.raises(ValueError, match=re.escape(str(path)) + ".*" + problem):
        read_labels(path)
    write_clips(tmp_path / "frames", 2)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load_task(tmp_path / "frames", path)


@pytest.mark.parametrize("missing", ["video", "split", "label"])
def test_a_missing_column_is_refused_naming_the_file(tmp_path, missing):
    path = tmp_path / "labels.csv"
    table = pd.DataFrame(standard_rows(2), columns=["video", "split", "label"])
    table.drop(columns=[missing]).to_csv(path, index=False)
    with pytest.raises(ValueError, match=re.escape(str(path)) + rf".*\['{missing}'\]"):
        read_labels(path)


def test_read_labels_keeps_extra_columns(tmp_path):
    path = tmp_path / "manifest.csv"
    table = pd.DataFrame(standard_rows(2), columns=["video", "split", "label"])
    table.assign(label_name=["a", "b"]).to_csv(path, index=False)
    labels = read_labels(path)
    assert list(labels["video"]) == ["clip_00000", "clip_00001"]
    assert "label_name" in labels


@pytest.mark.parametrize("empty", ["train", "test"])
def test_a_split_with_no_clip_is_an_error(tmp_path, empty):
    write_clips(tmp_path / "frames", 4)
    other = "test" if empty == "train" else "train"
    write_labels(tmp_path / "labels.csv", [(f"clip_{i:05d}", other, 0) for i in range(4)])
    with pytest.raises(ValueError, match=rf"clips\.h5: no {empty} clip"):
        load_task(tmp_path / "frames", tmp_path / "labels.csv")


def test_a_split_whose_clips_were_all_skipped_is_an_error(tmp_path):
    write_clips(tmp_path / "frames", 2)  # clips 0, 1 train; the test rows 2, 3 have no clip
    rows = [("clip_00000", "train", 0), ("clip_00001", "train", 1)]
    write_labels(tmp_path / "labels.csv", rows + [("clip_00002", "test", 0)])
    with pytest.raises(ValueError, match="no test clip"):
        load_task(tmp_path / "frames", tmp_path / "labels.csv")


def _clip_set(count: int) -> ClipSet:
    clips = np.arange(count, dtype=np.uint8)[:, None, None, None, None] * np.ones(
        (1, 2, 2, 2, 3), np.uint8
    )
    return ClipSet(clips, np.arange(count) % 4)


@pytest.mark.parametrize(
    ("count", "fraction", "held"), [(8, 0.25, 2), (20, 0.25, 5), (7, 0.5, 4), (4, 0.01, 1)]
)
def test_validation_split_sizes(count, fraction, held):
    train, validation = validation_split(_clip_set(count), fraction, seed=0)
    assert len(validation) == held and len(train) == count - held
    ids = np.concatenate([train.clips[:, 0, 0, 0, 0], validation.clips[:, 0, 0, 0, 0]])
    assert sorted(ids.tolist()) == list(range(count))  # disjoint, and every clip kept
    np.testing.assert_array_equal(train.labels, train.clips[:, 0, 0, 0, 0] % 4)
    assert np.all(np.diff(train.clips[:, 0, 0, 0, 0].astype(int)) > 0)  # original order


def test_validation_split_is_deterministic():
    clips = _clip_set(20)
    first = validation_split(clips, 0.25, seed=7)
    again = validation_split(clips, 0.25, seed=7)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.clips, b.clips)
        np.testing.assert_array_equal(a.labels, b.labels)
    held = {
        tuple(validation_split(clips, 0.25, seed=s)[1].clips[:, 0, 0, 0, 0].tolist())
        for s in range(5)
    }
    assert len(held) > 1  # another seed holds out other clips


def test_clip_set_subset():
    clips = _clip_set(5)
    subset = clips.subset(np.array([4, 1]))
    np.testing.assert_array_equal(subset.clips[:, 0, 0, 0, 0], [4, 1])
    np.testing.assert_array_equal(subset.labels, [0, 1])
