"""A record file's check: every defect with its line, JSONL and JSON arrays, and the refusal."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from reprolab.preprocess.instr.check import StreamFormatError, check_file, load_records, scan_file
from tests.preprocess.instr.conftest import record, write_images_h5, write_lines

Q = "<image>\nwhat ?"


def broken_file(tmp_path):
    """A JSONL file with one defect on each line from 2 on, and (line, message) of each."""
    write_images_h5(tmp_path / "images.h5", count=3)
    cv2.imwrite(str(tmp_path / "ok.png"), np.zeros((4, 4), dtype=np.uint8))
    good = record("r1", Q, "yes", image="h5:images.h5#/images/0")
    lines = [
        good,
        '{"id": "r2", "conversations": [',
        {"id": "r3", "image": "ok.png"},
        record("r4", Q, "no", image="ok.png")
        | {"conversations": [{"value": Q}, {"from": "gpt", "value": "no"}]},
        record("r5", "q", "a") | {"conversations": [{"from": "human", "value": "q"}] * 2},
        record("r6", Q, "no", image="COCO/none.jpg"),
        record("r7", "<image> <image>", "no", image="ok.png"),
        "   ",
        record("r1", Q, "no", image="ok.png"),
        record("r10", Q, "no", image="h5:images.h5#/images/3"),
    ]
    expected = [
        (2, None, "bad JSON: Expecting value at column"),
        (3, "r3", "missing key 'conversations'"),
        (4, "r4", "turn 1 has no 'from', expected 'human'"),
        (5, "r5", "turn 2: 'from' is 'human', expected 'gpt'"),
        (6, "r6", f"image 'COCO/none.jpg' does not exist (looked in {tmp_path}/COCO)"),
        (7, "r7", "2 <image> placeholders but 1 image(s)"),
        (9, "r1", "duplicate id 'r1' (first on line 1)"),
        (10, "r10", "image 'h5:images.h5#/images/3': index 3 out of range"),
    ]
    return write_lines(tmp_path / "broken.jsonl", lines), expected


def test_check_file_reports_every_defect_on_its_line(tmp_path):
    path, expected = broken_file(tmp_path)
    defects = check_file(path)
    assert len(defects) == len(expected), defects
    for defect, (line, record_id, message) in zip(defects, expected, strict=True):
        assert (defect.line, defect.record_id) == (line, record_id)
        assert defect.message.startswith(message), defect.message
    scan = scan_file(path)
    assert (scan.ok, scan.bad) == (1, 8)


def test_image_root_moves_where_files_are_looked_for(tmp_path):
    (tmp_path / "root" / "COCO").mkdir(parents=True)
    cv2.imwrite(str(tmp_path / "root/COCO/a.jpg"), np.zeros((4, 4, 3), dtype=np.uint8))
    path = write_lines(tmp_path / "r.jsonl", [record("a", Q, "x", image="COCO/a.jpg")])
    assert check_file(path, image_root=tmp_path / "root") == []
    assert "looked in" in check_file(path)[0].message


def test_a_json_array_reports_the_line_each_element_starts_on(tmp_path):
    elements = [record("a", "q", "x"), {"id": "b"}, record("c", "q", "x"), record("a", "q", "y")]
    path = tmp_path / "coin.json"
    path.write_text(json.dumps(elements, indent=4))  # each element spans several lines
    starts = [i + 1 for i, line in enumerate(path.read_text().split("\n")) if line == "    {"]
    defects = check_file(path)
    assert [(d.line, d.record_id) for d in defects] == [(starts[1], "b"), (starts[3], "a")]
    assert defects[1].message == f"duplicate id 'a' (first on line {starts[0]})"
    compact = tmp_path / "one_line.json"
    compact.write_text("\n\n  " + json.dumps(elements[:2]) + "\n")
    assert [d.line for d in check_file(compact)] == [3]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('[{"id": "a",\n "x": }]', 2, "bad JSON: Expecting value at column 7; the rest"),
        ('[\n{"id": 1}\n{"id": 2}]', 3, "bad JSON: expected ',' or ']' after the record"),
        ("[]\n\nx", 3, "text after the closing ']' of the array"),
        ('[{"id": "a"},]', 1, "bad JSON: Expecting value at column 14"),
    ],
)
def test_array_syntax_errors_name_their_line(tmp_path, text, line, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    defects = check_file(path)
    assert any(d.line == line and d.message.startswith(message) for d in defects), defects


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "holds no records"),
        ("\n  \n", "holds no records"),
        ("[ ]\n", "holds no records"),
        ("\nid,question\n", "is neither JSONL nor a JSON array of records: its first character"),
    ],
)
def test_a_file_of_no_records_is_one_defect_naming_the_file(tmp_path, text, message):
    path = tmp_path / "x.jsonl"
    path.write_text(text)
    (defect,) = check_file(path)
    assert str(path) in defect.message and message in defect.message


def test_non_utf8_and_missing_files(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"id": "\xe9"}\n')
    assert "is not UTF-8 text" in check_file(path)[0].message
    with pytest.raises(FileNotFoundError, match="record file .*none.jsonl does not exist"):
        check_file(tmp_path / "none.jsonl")


def test_load_records_refuses_a_bad_file_with_the_whole_report(tmp_path):
    path, expected = broken_file(tmp_path)
    with pytest.raises(StreamFormatError) as caught:
        load_records(path)
    lines = str(caught.value).split("\n")
    assert lines[0] == f"{path}: 8 defect(s)"
    assert lines[1].startswith("line 2: bad JSON")
    assert lines[2] == "line 3 (id r3): missing key 'conversations'"
    assert len(lines) == 1 + len(expected)


def test_load_records_fills_task_and_metric_and_resolves_images(tmp_path):
    write_images_h5(tmp_path / "images.h5", count=2)
    path = write_lines(
        tmp_path / "sub" / "r.jsonl",
        [
            record("a", Q, "x", image="h5:../images.h5#/images/1"),
            record("b", "q", "y", task="own", eval={"metric": "cider"}),
        ],
    )
    first, second = load_records(path, task="t", metric="exact_match")
    assert first.images == (f"h5:{tmp_path}/images.h5#/images/1",)
    assert (first.task, first.metric, second.task, second.metric) == (
        "t",
        "exact_match",
        "own",
        "cider",
    )
