"""SynthCIT: reproducible bytes, disjoint digit pools, correct labels, valid records."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
from sklearn.datasets import load_digits

from reprolab.core.io import read_h5
from reprolab.core.params import ParamsError
from reprolab.preprocess.instr.check import check_file
from reprolab.preprocess.instr.records import IMAGE_TOKEN
from reprolab.preprocess.instr.synthcit import (
    NUMBER_WORDS,
    QUADRANTS,
    SynthCITSpec,
    build_synthcit,
    digit_pools,
    vocabulary,
)
from tests.preprocess.instr.conftest import SMALL_SPEC

TARGETS = load_digits().target
IMAGES = load_digits().images


def records_of(root, relative):
    return [json.loads(line) for line in (root / relative).read_text().splitlines()]


def all_records(root):
    names = ["align.jsonl"] + [
        f"{task['name']}/{split}.jsonl"
        for task in SMALL_SPEC["tasks"]
        for split in ("train", "test")
    ]
    return {name: records_of(root, name) for name in names}


def question(record):
    text = record["conversations"][0]["value"]
    assert text.startswith(f"{IMAGE_TOKEN}\n")
    return text[len(IMAGE_TOKEN) + 1 :].split()


def number(word):
    return NUMBER_WORDS.index(word)


def image_of(images, record):
    return images[int(record["image"].rsplit("/", 1)[1])]


def file_hashes(root):
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_two_builds_give_the_same_bytes(tmp_path, synthcit, small_spec):
    again = build_synthcit(small_spec, tmp_path / "again")
    assert file_hashes(again.parent) == file_hashes(synthcit.parent)
    assert len(file_hashes(again.parent)) == 2 + 1 + 2 * len(SMALL_SPEC["tasks"])


# sha256 of the pixels and of every file of two builds, recorded before `render` drew several
# digits and the spec reader was shared with VisArith; the h5 file's bytes also depend on the
# HDF5 library (pinned in requirements.lock), the pixels' hash does not.
TINY_SPEC = {
    "seed": 5,
    "noise": 7.5,
    "stroke_gain": [0.5, 0.9],
    "align": {"kind": "caption", "n": 6},
    "tasks": [
        {"name": "d", "kind": "digit_id", "train": 5, "test": 3},
        {"name": "m", "kind": "mixed_open", "train": 4, "test": 2},
    ],
}
TINY_FILES = {
    "align.jsonl": "90fe54b2477430c99cf65502952f1e4e14dcd107a0c13ce1f9d6cdc2ae037a31",
    "d/test.jsonl": "0bbd3794dee77d7f6b415e127da142c6b3b374eb789cf2b7f199465b4ca08324",
    "d/train.jsonl": "148e92e487ce79e4c704f3da2798ac9b46156ec614fd9123de2e0e2dc1a3f899",
    "m/test.jsonl": "b05ed3a2efb64148b3e3f3f3cf7e0125d16b43f97f5348929bdf51f4c5e34afb",
    "m/train.jsonl": "5c90a1d655f024f19171b80804dd7df2b3250571e7a64b54d9691a5dbcda2593",
    "stream.yaml": "85185c7c86e81a5f632519ccf852b096e29d676f1e216e3f82cc3632b2f15fbe",
    "synthcit.h5": "aed20ea994a5a4ab6d8b9de67c2e827536f2440fc509678f908fc0e0dc162375",
}
SMALL_FILES = {
    "align.jsonl": "23135a5dee8da3870d1551264f4e3109934a752150cd6ac1c63e663dda3da48f",
    "compare/test.jsonl": "c88f0ae1fba7d678c6eb6372d7ad0a50caba09101128ea735ba971281ffc016b",
    "compare/train.jsonl": "b72fe0055be6469bcc7514611425305ec6c5b4bd646f8800e81082472636e677",
    "digit/test.jsonl": "50dca67c96f959ef4cfa71a4968eb15febc3e3abf53f195fa8fab3cc3fd488cf",
    "digit/train.jsonl": "982b186ef721f782d899ca51043e0aa39ae4f9092abfb9ebb4597edffe2a24b8",
    "mixed/test.jsonl": "9f4c83139e59fd0b5f64275911135c1719abbaf6f39a93f5b3b08434d75f3ccc",
    "mixed/train.jsonl": "7666f392c9fd143e9f953198a1c242ec6b3375dcec5b18c204777f4ccc54c936",
    "plus/test.jsonl": "1afa9d20b37dcc2ade7804490a06b9e284b84d25204b87f3db990f786ab038ac",
    "plus/train.jsonl": "53ac685f22a39de4e4ceca1bff90adf665d19fe517be932cc09f8ba5f6582caa",
    "plus2/test.jsonl": "ece9f51699dadedc48d38b049c2369765fe03b3ed558181f082acce004db56c2",
    "plus2/train.jsonl": "dd2d5f08a3104ea259ec9539830d1d7172a55c9c784fa48f715cc85316b33caf",
    "stream.yaml": "ef822885c2635c2e59fc5d87f391b6694b017f8f5b2896dd3c46bafac74aeeee",
    "synthcit.h5": "6f5899b012ad2a18bfa69ad0b4e590bded76fb497fce15cf18daf54e7dca7865",
    "where/test.jsonl": "021549f6e1993ccfc288c0dea0cc46c2bc43c5127e2430e92a9da5b15be47107",
    "where/train.jsonl": "f6ceec1f737ca8a9c9c4353ba4050223985903072cab896c752a1ec606e22f24",
}
PINNED = {
    "tiny": (
        TINY_SPEC,
        "dcd2427414ebb631bc5a1d39494e6062417ecff2b112a81ebbd84bfc2c6eb39d",
        TINY_FILES,
    ),
    "small": (
        SMALL_SPEC,
        "ff98ffb414c41ac0368c51b076329aabeb4118bab4e6520cd8b14ec60cdfd4d9",
        SMALL_FILES,
    ),
}


@pytest.mark.parametrize("name", PINNED)
def test_a_build_keeps_its_recorded_bytes(tmp_path, name):
    spec, pixels, hashes = PINNED[name]
    root = build_synthcit(SynthCITSpec.from_params(spec), tmp_path).parent
    images = read_h5(root / "synthcit.h5")["images"]
    assert hashlib.sha256(images.tobytes()).hexdigest() == pixels
    assert file_hashes(root) == hashes


def test_the_digit_pools_are_disjoint_and_each_split_draws_from_its_own(synthcit):
    pools = digit_pools(len(TARGETS))
    align, train, test = (set(pools[name].tolist()) for name in ("align", "train", "test"))
    assert not (align & train or align & test or train & test)
    assert len(align | train | test) == len(TARGETS)
    for name, records in all_records(synthcit.parent).items():
        pool = align if name == "align.jsonl" else train if name.endswith("train.jsonl") else test
        assert {r["meta"]["source"] for r in records} <= pool, name


def test_every_record_passes_the_check_and_every_word_is_in_the_vocabulary(synthcit, small_spec):
    words = set(vocabulary(small_spec))
    assert 30 <= len(words) <= 80 and IMAGE_TOKEN not in words
    ids = set()
    for name, records in all_records(synthcit.parent).items():
        assert check_file(synthcit.parent / name) == []
        for record in records:
            assert set(question(record)) | set(record["conversations"][1]["value"].split()) <= words
            assert record["eval"] == {"metric": "exact_match"}
            ids.add(record["id"])
    assert "plus-train-00012" in ids and "align-00003" in ids


def test_images_hold_the_source_digit_in_the_labelled_quadrant(tmp_path):
    spec = SynthCITSpec.from_params(SMALL_SPEC | {"noise": 0.0})
    root = build_synthcit(spec, tmp_path).parent
    images = read_h5(root / "synthcit.h5")["images"]
    assert images.dtype == np.uint8 and images.shape == (40 + 60 * 6, 16, 16)
    for records in all_records(root).values():
        for record in records:
            meta, image = record["meta"], image_of(images, record).astype(float)
            row, col = divmod(QUADRANTS.index(meta["quadrant"]), 2)
            quadrant = image[row * 8 : row * 8 + 8, col * 8 : col * 8 + 8]
            assert image.sum() == quadrant.sum()  # nothing outside the quadrant without noise
            digit = IMAGES[meta["source"]] * 255 / 16
            gain = quadrant.sum() / digit.sum()
            assert 0.6 - 0.01 <= gain <= 1.0 + 0.01
            assert np.abs(quadrant - digit * gain).max() <= 1.0
            assert TARGETS[meta["source"]] == meta["digit"]


def test_visual_answers_match_the_image(synthcit):
    images = read_h5(synthcit.parent / "synthcit.h5")["images"]
    root = synthcit.parent
    for record in records_of(root, "where/train.jsonl") + records_of(root, "where/test.jsonl"):
        answer = record["conversations"][1]["value"]
        means = [
            image_of(images, record)[r : r + 8, c : c + 8].mean() for r in (0, 8) for c in (0, 8)
        ]
        assert QUADRANTS[int(np.argmax(means))] == answer == record["meta"]["quadrant"]
        assert record["meta"]["visual_needed"] is True
    for record in records_of(root, "digit/train.jsonl"):
        assert (
            record["conversations"][1]["value"] == NUMBER_WORDS[TARGETS[record["meta"]["source"]]]
        )
    for record in records_of(root, "align.jsonl"):
        meta = record["meta"]
        expected = f"{NUMBER_WORDS[TARGETS[meta['source']]]} {meta['quadrant']}"
        assert record["conversations"][1]["value"] == expected and question(record) == [
            "describe", "the", "image", "."
        ]  # fmt: skip
    answers = [r["conversations"][1]["value"] for r in records_of(root, "digit/train.jsonl")]
    assert sorted(set(answers)) == sorted(NUMBER_WORDS[:10])
    assert max(answers.count(a) for a in answers) == 4  # 40 records, ten digits, balanced


def test_text_answers_are_right(synthcit):
    root = synthcit.parent
    for record in records_of(root, "plus/train.jsonl"):
        words = question(record)
        assert words[:2] == ["what", "is"] and words[3] == "plus"
        assert number(record["conversations"][1]["value"]) == number(words[2]) + number(words[4])
        assert record["meta"]["visual_needed"] is False
    for record in records_of(root, "compare/test.jsonl"):
        words = question(record)  # which is larger , A or B ?
        a, b = number(words[4]), number(words[6])
        assert a != b and number(record["conversations"][1]["value"]) == max(a, b)


def test_mixed_splits_visual_and_text_and_balances_yes(synthcit):
    records = records_of(synthcit.parent, "mixed/train.jsonl")
    visual = [r for r in records if r["meta"]["visual_needed"]]
    text = [r for r in records if not r["meta"]["visual_needed"]]
    assert len(visual) == len(text) == 20
    for group in (visual, text):
        assert sum(r["conversations"][1]["value"] == "yes" for r in group) == 10
    for record in visual:  # is the digit a K ?
        asked = number(question(record)[4])
        assert (record["conversations"][1]["value"] == "yes") == (asked == record["meta"]["digit"])
    for record in text:  # is A equal to B ?
        words = question(record)
        assert (record["conversations"][1]["value"] == "yes") == (words[1] == words[4])


def test_a_kind_repeated_under_another_name_gets_its_own_items(synthcit):
    first = records_of(synthcit.parent, "plus/train.jsonl")
    second = records_of(synthcit.parent, "plus2/train.jsonl")
    assert [question(r) for r in first] != [question(r) for r in second]
    assert {r["task"] for r in second} == {"plus2"}


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"colour": 1}, "colour"),
        ({"seed": -1}, "seed"),
        ({"noise": "loud"}, "noise"),
        ({"noise": float("nan")}, "noise"),
        ({"stroke_gain": [0.9, 0.5]}, "stroke_gain[1]"),
        ({"stroke_gain": [0.0, 0.5]}, "stroke_gain[0]"),
        ({"stroke_gain": 0.5}, "stroke_gain"),
        ({"align": {"kind": "digit_id", "n": 4}}, "align.kind"),
        ({"align": {"kind": "caption"}}, "align.n"),
        ({"tasks": []}, "tasks"),
        ({"tasks": [{"name": "a", "kind": "caption", "train": 1, "test": 1}]}, "tasks[0].kind"),
        ({"tasks": [{"name": "a b", "kind": "arith", "train": 1, "test": 1}]}, "tasks[0].name"),
        ({"tasks": [{"name": "a", "kind": "arith", "train": 0, "test": 1}]}, "tasks[0].train"),
        ({"tasks": [{"name": "a", "kind": "arith", "train": 1}]}, "tasks[0].test"),
        ({"tasks": [{"name": "a", "kind": "arith", "train": 1, "test": 1}] * 2}, "tasks[1].name"),
    ],
)
def test_from_params_names_the_bad_key(change, key):
    with pytest.raises(ParamsError, match=re.escape(f"synthcit spec: key '{key}': ")):
        SynthCITSpec.from_params(SMALL_SPEC | change)


def test_align_may_be_left_out(tmp_path):
    spec = SynthCITSpec.from_params({k: v for k, v in SMALL_SPEC.items() if k != "align"})
    manifest = build_synthcit(spec, tmp_path)
    assert not (tmp_path / "align.jsonl").exists() and "align" not in manifest.read_text()
    assert "describe" not in vocabulary(spec)


def test_mixed_open_asks_digit_and_sum_questions_with_number_answers(tmp_path):
    spec = {
        "seed": 3,
        "noise": 0.0,
        "stroke_gain": [1.0, 1.0],
        "tasks": [{"name": "open", "kind": "mixed_open", "train": 30, "test": 10}],
    }
    build_synthcit(SynthCITSpec.from_params(spec), tmp_path)
    records = records_of(tmp_path, "open/train.jsonl")
    visual = [r for r in records if r["meta"]["visual_needed"]]
    text = [r for r in records if not r["meta"]["visual_needed"]]
    assert len(visual) == len(text) == 15
    for record in visual:  # what digit is shown ?
        assert question(record) == ["what", "digit", "is", "shown", "?"]
        assert number(record["conversations"][1]["value"]) == record["meta"]["digit"]
    for record in text:  # what is A plus B ?
        words = question(record)
        assert number(record["conversations"][1]["value"]) == number(words[2]) + number(words[4])
