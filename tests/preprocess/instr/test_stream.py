"""stream.yaml: a CoIN-layout task loads through the same loader as SynthCIT; bad manifests."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
import yaml

from reprolab.preprocess.instr.check import StreamFormatError
from reprolab.preprocess.instr.images import ImageLoader
from reprolab.preprocess.instr.stream import (
    Manifest,
    TaskFiles,
    load_stream,
    read_manifest,
    record_files,
    write_stream,
)
from tests.preprocess.instr.conftest import record, write_lines

TASK = {"name": "t", "train": "a", "test": "b", "metric": "m"}
COCO = "COCO2014/train2014/COCO_train2014_000000000009.jpg"
COIN_RECORDS = [
    {
        "id": "textvqa-0",
        "image": COCO,
        "conversations": [
            {
                "from": "human",
                "value": "<image>\nWhat is written on the sign?\n"
                "Answer the question using a single word or phrase.",
            },
            {"from": "gpt", "value": "stop"},
        ],
    },
    {
        "id": "scienceqa-1",
        "conversations": [
            {
                "from": "human",
                "value": "Which tense does the sentence use?\nMona will print her name.\n"
                "A. future tense\nB. past tense\n"
                "Answer with the option's letter from the given choices directly.",
            },
            {"from": "gpt", "value": "A"},
        ],
    },
]


def coin_stream(tmp_path):
    """A CoIN-layout dataset (JSON arrays, a jpg under a dataset root) and its stream.yaml."""
    picture = np.zeros((12, 16, 3), dtype=np.uint8)
    picture[..., 2] = 200  # red in OpenCV's BGR
    (tmp_path / "coin" / "COCO2014" / "train2014").mkdir(parents=True)
    assert cv2.imwrite(str(tmp_path / "coin" / COCO), picture)
    for split in ("train", "test"):
        folder = tmp_path / "instructions" / "TextVQA"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{split}.json").write_text(json.dumps(COIN_RECORDS, indent=4))
    manifest = {
        "name": "coin-mini",
        "tasks": [
            {
                "name": "textvqa",
                "train": "instructions/TextVQA/train.json",
                "test": "instructions/TextVQA/test.json",
                "metric": "vqa_acc",
                "image_root": "coin",
            }
        ],
    }
    path = tmp_path / "stream.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def test_a_coin_layout_stream_loads_with_tasks_metrics_and_rgb_images(tmp_path):
    stream = load_stream(coin_stream(tmp_path))
    assert stream.name == "coin-mini" and stream.align is None and stream.images is None
    (task,) = stream.tasks
    assert (task.name, task.metric, len(task.train), len(task.test)) == ("textvqa", "vqa_acc", 2, 2)
    visual, text_only = task.train
    assert (visual.task, visual.metric, text_only.task, text_only.metric) == (
        "textvqa",
        "vqa_acc",
        "textvqa",
        "vqa_acc",
    )
    assert visual.answer == "stop" and visual.prompt.startswith("<image>\nWhat is written")
    assert text_only.images == () and text_only.answer == "A"
    with ImageLoader() as loader:
        (image,) = loader.load_many(visual.images)
    assert image.dtype == np.uint8 and image.shape == (12, 16, 3)
    assert abs(int(image[..., 0].mean()) - 200) <= 2 and int(image[..., 2].max()) <= 2  # RGB


def test_the_synthetic_stream_loads_through_the_same_path(synthcit):
    stream = load_stream(synthcit)
    assert [t.name for t in stream.tasks] == ["digit", "plus", "where", "compare", "mixed", "plus2"]
    assert stream.images == synthcit.parent / "synthcit.h5" and len(stream.align) == 40
    assert {r.task for r in stream.align} == {"align"}
    with ImageLoader() as loader:
        images = loader.load_many(stream.tasks[0].test[0].images + stream.align[0].images)
    assert [image.shape for image in images] == [(16, 16), (16, 16)]


def test_a_bad_record_file_is_refused_with_its_report(tmp_path):
    path = coin_stream(tmp_path)
    bad = tmp_path / "instructions" / "TextVQA" / "test.json"
    bad.write_text(json.dumps([COIN_RECORDS[0] | {"image": "COCO2014/none.jpg"}]))
    with pytest.raises(StreamFormatError) as caught:
        load_stream(path)
    message = str(caught.value)
    assert f"{bad}: 1 defect(s)" in message
    assert "line 1 (id textvqa-0): image 'COCO2014/none.jpg' does not exist" in message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": 1}, "key 'colour': unknown key"),
        ({"name": 3}, "key 'name': an integer, expected a non-empty string"),
        ({"tasks": []}, "key 'tasks': expected a non-empty list of tasks"),
        ({"tasks": [{"name": "a", "train": "a", "test": "b"}]}, "key 'tasks[0].metric': missing"),
        ({"tasks": ["a"]}, "key 'tasks[0]': a string, expected a mapping"),
        (
            {"tasks": [{"name": "align", "train": "a", "test": "b", "metric": "m"}]},
            "key 'tasks[0].name': 'align' is reserved for the alignment data",
        ),
        (
            {"tasks": [{"name": "t", "train": "a", "test": "b", "metric": "m", "split": 1}, TASK]},
            "key 'tasks[0].split': unknown key",
        ),
        (
            {"tasks": [TASK, TASK.copy()]},
            "key 'tasks[1].name': 't' names an earlier task too",
        ),
    ],
)
def test_a_bad_manifest_names_the_file_and_the_key(tmp_path, change, message):
    path = tmp_path / "stream.yaml"
    good = {"name": "s", "tasks": [{"name": "t", "train": "a", "test": "b", "metric": "m"}]}
    path.write_text(yaml.safe_dump(good | change))
    with pytest.raises(StreamFormatError) as caught:
        read_manifest(path)
    assert f"{path}: {message}" in str(caught.value).split("\n")


def test_missing_files_are_named_with_their_key(tmp_path):
    path = tmp_path / "stream.yaml"
    write_lines(tmp_path / "a.jsonl", [record("a", "q", "x")])
    tasks = [TaskFiles("t", "a.jsonl", "missing.jsonl", "exact_match")]
    write_stream(path, Manifest("s", tuple(tasks), images="none.h5"))
    with pytest.raises(StreamFormatError) as caught:
        load_stream(path)
    assert str(caught.value).split("\n") == [
        f"{path}: key 'tasks[0].test': record file {tmp_path}/missing.jsonl does not exist",
        f"{path}: key 'images': file {tmp_path}/none.h5 does not exist",
    ]
    path.write_text("name: [unclosed\n")
    with pytest.raises(StreamFormatError, match="while parsing a flow sequence"):
        read_manifest(path)


def test_write_stream_round_trips_and_record_files_resolve_roots(tmp_path):
    manifest = Manifest(
        "s",
        (
            TaskFiles("a", "a/train.json", "a/test.json", "cider", "imgs"),
            TaskFiles("b", "b", "c", "iou"),
        ),
        align="align.jsonl",
        images="x.h5",
        image_root="root",
    )
    write_stream(tmp_path / "stream.yaml", manifest)
    assert read_manifest(tmp_path / "stream.yaml") == manifest
    files = record_files(tmp_path / "stream.yaml")
    assert [(f.key, f.path.name, f.image_root.name, f.task, f.metric) for f in files] == [
        ("align", "align.jsonl", "root", "align", None),
        ("tasks[0].train", "train.json", "imgs", "a", "cider"),
        ("tasks[0].test", "test.json", "imgs", "a", "cider"),
        ("tasks[1].train", "b", "root", "b", "iou"),
        ("tasks[1].test", "c", "root", "b", "iou"),
    ]


def test_manifest_paths_outside_the_stream_folder_are_refused_unless_allowed(tmp_path):
    """`train: ../../../../etc/passwd` was read (and its first character printed)."""
    stream = tmp_path / "stream"
    stream.mkdir()
    manifest = Manifest(
        "s",
        (TaskFiles("a", "../../../../etc/passwd", "/etc/passwd", "m", "../imgs"),),
        images="sub/../../x.h5",
    )
    write_stream(stream / "stream.yaml", manifest)
    with pytest.raises(StreamFormatError) as caught:
        record_files(stream / "stream.yaml")
    keys = [line.split(": key ")[1].split(":")[0] for line in str(caught.value).splitlines()]
    assert keys == ["'images'", "'tasks[0].train'", "'tasks[0].test'", "'tasks[0].image_root'"]
    assert "root:" not in str(caught.value)
    with pytest.raises(StreamFormatError, match="lies outside the stream's folder"):
        load_stream(stream / "stream.yaml")
    files = record_files(stream / "stream.yaml", allow_outside=True)
    assert [f.path.as_posix() for f in files] == [f"{stream}/../../../../etc/passwd", "/etc/passwd"]


def test_record_images_outside_the_stream_folder_are_defects_unless_allowed(tmp_path):
    """A record of a stream may not name an image outside the stream's folder; a symlinked data
    folder inside it counts as inside."""
    data = tmp_path / "data"
    coin_stream(data)
    outside = [{**COIN_RECORDS[0], "id": "out", "image": "../../elsewhere.jpg"}]
    (data / "instructions" / "TextVQA" / "train.json").write_text(json.dumps(outside))
    cv2.imwrite(str(tmp_path / "elsewhere.jpg"), np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(StreamFormatError, match=r"image '\.\./\.\./elsewhere\.jpg' lies outside"):
        load_stream(data / "stream.yaml")
    assert len(load_stream(data / "stream.yaml", allow_outside=True).tasks[0].train) == 1
    linked = tmp_path / "linked"
    coin_stream(linked)
    (linked / "coin").rename(tmp_path / "real_coin")
    (linked / "coin").symlink_to(tmp_path / "real_coin")
    assert len(load_stream(linked / "stream.yaml").tasks[0].train) == 2


def test_a_manifest_is_plain_yaml_and_its_errors_echo_no_text(tmp_path):
    """Anchors and aliases (an alias bomb expands exponentially) are refused like in params
    files, and a syntax error names the line without printing the file's text."""
    path = tmp_path / "stream.yaml"
    path.write_text("name: &n s\ntasks: *n\n")
    with pytest.raises(StreamFormatError, match=rf"^{path}, line 1, column 7: YAML anchor '&n'"):
        read_manifest(path)
    path.write_text("name: s\nSECRET: [unclosed\n")
    with pytest.raises(StreamFormatError, match=rf"^{path}, line 3, column 1: ") as caught:
        read_manifest(path)
    assert "SECRET" not in str(caught.value)
