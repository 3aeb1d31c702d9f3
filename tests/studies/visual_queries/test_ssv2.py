"""Something-Something v2 label and split files: templates, fillers, clear errors."""

from __future__ import annotations

import pytest

from reprolab.studies.visual_queries.ssv2 import Ssv2Video, read_labels, read_split

from .real_data import write_json

LABELS = {
    "Putting something into something": "104",
    "Taking something out of something": "143",
    "Pushing something from left to right": "93",
    "Putting number of something onto something": "111",
    "Moving something up": "87",
}


def labels(tmp_path) -> dict[str, int]:
    return read_labels(write_json(tmp_path / "something-something-v2-labels.json", LABELS))


def test_a_split_gives_each_video_its_template_class_and_fillers(tmp_path):
    entries = [
        {
            "id": "78687",
            "label": "putting pen into box",
            "template": "Putting [something] into [something]",
            "placeholders": ["pen", "box"],
        },
        {
            "id": "42326",
            "label": "putting 2 cups onto a plate",
            "template": "Putting [number of] [something] onto [something]",
            "placeholders": ["2", "cups", "a plate"],
        },
    ]
    split = write_json(tmp_path / "something-something-v2-validation.json", entries)
    videos = read_split(split, labels(tmp_path))
    assert videos["78687"] == Ssv2Video(
        "78687", "Putting [something] into [something]", 104, ("pen", "box")
    )
    assert videos["42326"].class_index == 111


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"id": "1420"}, "entry 0: has no key 'template' .*the test split is unlabelled"),
        (
            {"id": "1", "template": "Juggling [something]", "placeholders": ["x"]},
            "'template' 'Juggling \\[something\\]' .* is not in the labels file",
        ),
        (
            {"id": "1", "template": "Moving [something] up", "placeholders": []},
            "'placeholders' is \\[\\] .*expected 1 string",
        ),
        (
            {"id": 5, "template": "Moving [something] up", "placeholders": ["a"]},
            "entry 0: 'id' is 5; expected a non-empty string",
        ),
    ],
)
def test_bad_split_entries_name_the_file_entry_and_key(tmp_path, entry, message):
    path = write_json(tmp_path / "split.json", [entry])
    with pytest.raises(ValueError, match=message) as raised:
        read_split(path, labels(tmp_path))
    assert str(path) in str(raised.value)


def test_bad_label_files_and_repeated_ids_are_refused(tmp_path):
    with pytest.raises(
        ValueError, match="'Moving something up' has class index 87; expected a string"
    ):
        read_labels(write_json(tmp_path / "l.json", {"Moving something up": 87}))
    with pytest.raises(ValueError, match="two templates share a class index"):
        read_labels(write_json(tmp_path / "l.json", {"a": "1", "b": "1"}))
    entry = {"id": "7", "template": "Moving [something] up", "placeholders": ["a"]}
    with pytest.raises(ValueError, match="entry 1: 'id' 7 is listed twice"):
        read_split(write_json(tmp_path / "s.json", [entry, entry]), labels(tmp_path))
