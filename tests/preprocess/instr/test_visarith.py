"""VisArith: the chain answer and its parser, the four-digit images, the prior, disjoint image
pools, reproducible bytes, spec errors, and records the loader, checker and tokenizer accept."""

from __future__ import annotations

import hashlib
import itertools
import json
import re

import numpy as np
import pytest
from sklearn.datasets import load_digits

from reprolab.core.io import read_h5
from reprolab.core.params import ParamsError
from reprolab.models.tiny_vlm import build_tokenizer
from reprolab.preprocess.instr.check import check_file
from reprolab.preprocess.instr.images import ImageLoader
from reprolab.preprocess.instr.records import IMAGE_TOKEN
from reprolab.preprocess.instr.stream import load_stream
from reprolab.preprocess.instr.synthcit import digit_pools
from reprolab.preprocess.instr.visarith import (
    DEFAULT_PRIOR,
    ParsedChain,
    VisArithSpec,
    build_visarith,
    chain_answer,
    chain_result,
    parse_chain,
    split_pools,
    vocabulary,
)

DIGITS = load_digits()
SPEC = {
    "seed": 5,
    "noise": 20.0,
    "stroke_gain": [0.6, 1.0],
    "tasks": [{"name": "sft", "train": 24, "test": 10}, {"name": "rl", "train": 16, "test": 12}],
}
FILES = [f"{t['name']}/{split}.jsonl" for t in SPEC["tasks"] for split in ("train", "test")]


@pytest.fixture(scope="module")
def visarith(tmp_path_factory):
    """The small spec's stream.yaml, built once (tests must not modify it)."""
    return build_visarith(VisArithSpec.from_params(SPEC), tmp_path_factory.mktemp("visarith"))


def records_of(root, relative):
    return [json.loads(line) for line in (root / relative).read_text().splitlines()]


def without_images(records):
    return [{k: v for k, v in r.items() if k != "image"} for r in records]


def file_hashes(root):
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_answer_is_a_chain_of_running_sums_mod_10():
    answer = "see 4 1 0 0 , 4 + 1 = 5 , 5 + 0 = 5 , 5 + 0 = 5 , so 5"
    assert chain_answer([4, 1, 0, 0]) == answer and chain_result([4, 1, 0, 0]) == 5
    assert chain_answer((9, 8, 7, 6)) == "see 9 8 7 6 , 9 + 8 = 7 , 7 + 7 = 4 , 4 + 6 = 0 , so 0"
    assert chain_answer(np.array([3, 9, 9, 1])) == chain_answer([3, 9, 9, 1])  # numpy ints too


def test_every_answer_parses_back_to_its_digits_and_correct_steps():
    for digits in itertools.product(range(10), repeat=4):
        parsed = parse_chain(chain_answer(digits))
        a, b, c, d = digits
        x = (a + b) % 10
        y = (x + c) % 10
        z = (y + d) % 10
        assert parsed == ParsedChain(digits, ((a, b, x), (x, c, y), (y, d, z)), z), digits
        assert parsed.sums == (x, y, z) and chain_result(digits) == z == sum(digits) % 10


@pytest.mark.parametrize(
    "digits",
    [[1, 2, 3], [1, 2, 3, 4, 5], [1, 2, 3, 10], [1, 2, -1, 3], [1, 2, 3, True], [1.0, 2, 3, 4]],
)
def test_the_chain_refuses_anything_but_four_digits(digits):
    with pytest.raises(ValueError, match="expected 4 digits in 0-9"):
        chain_answer(digits)
    with pytest.raises(ValueError, match="expected 4 digits in 0-9"):
        chain_result(digits)


def test_the_parser_reads_wrong_arithmetic_as_written_and_ignores_spacing():
    parsed = parse_chain("see 4 2 0 0 , 4 + 1 = 6 , 3 + 0 = 3 , 3 + 0 = 9 , so 1")
    assert parsed == ParsedChain((4, 2, 0, 0), ((4, 1, 6), (3, 0, 3), (3, 0, 9)), 1)
    assert parsed.sums == (6, 3, 9)
    spaced = "  see 4 1\n0  0 ,\t4 + 1 = 5 , 5 + 0 = 5 , 5 + 0 = 5 , so 5\n"
    assert parse_chain(spaced) == parse_chain(chain_answer([4, 1, 0, 0]))


GOOD = "see 4 1 0 0 , 4 + 1 = 5 , 5 + 0 = 5 , 5 + 0 = 5 , so 5"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "5",
        GOOD.replace(" so", ""),  # no "so"
        GOOD.removesuffix(" 5"),  # no final digit
        GOOD + " .",  # a word added
        "the answer : " + GOOD,
        GOOD.replace("see", "saw"),
        GOOD.replace("+", "-", 1),
        GOOD.replace("= 5 , 5 +", "= 5 5 +", 1),  # a comma missing
        GOOD.replace("so 5", "so 15"),  # not one digit
        GOOD.replace("4 + 1", "04 + 1"),
        GOOD.replace("so 5", "so -5"),
        GOOD.replace("so 5", "so five"),
        GOOD.replace("so 5", "so ٥"),  # a digit, but not 0-9
        GOOD.replace("see 4 1 0 0", "see 4 1 0"),  # three digits read
        GOOD.replace(" , 5 + 0 = 5 , so", " , so"),  # a step missing
        GOOD.replace(" ", ""),
        GOOD.replace("so 5", "so {}"),  # the template's own slot
    ],
)
def test_the_parser_refuses_text_not_in_the_format(text):
    assert parse_chain(GOOD) is not None
    assert parse_chain(text) is None


def test_records_are_llava_chain_sum_questions(visarith):
    ids = set()
    for relative in FILES:
        for record in records_of(visarith.parent, relative):
            meta = record["meta"]
            assert record["conversations"] == [
                {"from": "human", "value": f"{IMAGE_TOKEN}\nadd the digits"},
                {"from": "gpt", "value": chain_answer(meta["digits"])},
            ]
            assert meta["result"] == chain_result(meta["digits"])
            assert meta["visual_needed"] is True and meta["kind"] == "chain_sum"
            assert [int(DIGITS.target[s]) for s in meta["sources"]] == meta["digits"]
            assert record["task"] == relative.split("/")[0]
            assert record["eval"] == {"metric": "exact_match"}
            assert record["image"].startswith("h5:../visarith.h5#/images/")
            ids.add(record["id"])
    assert len(ids) == 24 + 10 + 16 + 12 and "rl-test-00011" in ids


def test_each_quadrant_holds_its_digit_scaled_by_its_gain(tmp_path):
    stream = load_stream(build_visarith(VisArithSpec.from_params(SPEC | {"noise": 0.0}), tmp_path))
    records = [r for task in stream.tasks for r in task.train + task.test]
    with ImageLoader() as loader:
        images = loader.load_many(r.images[0] for r in records)
    assert read_h5(tmp_path / "visarith.h5")["images"].shape == (62, 16, 16)
    for record, image in zip(records, images, strict=True):
        assert image.dtype == np.uint8 and image.shape == (16, 16)
        for quadrant, source in enumerate(record.meta["sources"]):
            row, col = divmod(quadrant, 2)
            cell = image[row * 8 : row * 8 + 8, col * 8 : col * 8 + 8].astype(float)
            digit = DIGITS.images[source] * 255 / 16
            gain = cell.sum() / digit.sum()
            assert 0.6 - 0.01 <= gain <= 1.0 + 0.01
            assert np.abs(cell - digit * gain).max() <= 1.0


def test_noise_changes_the_pixels_but_not_the_records(tmp_path, visarith):
    quiet = build_visarith(VisArithSpec.from_params(SPEC | {"noise": 0.0}), tmp_path).parent
    noisy = read_h5(visarith.parent / "visarith.h5")["images"].astype(float)
    clean = read_h5(quiet / "visarith.h5")["images"].astype(float)
    assert 10 < np.std(noisy - clean) < 25
    for relative in FILES:
        assert (quiet / relative).read_bytes() == (visarith.parent / relative).read_bytes()


def test_digits_follow_the_prior(tmp_path):
    spec = SPEC | {"noise": 0.0, "tasks": [{"name": "big", "train": 2000, "test": 500}]}
    build_visarith(VisArithSpec.from_params(spec), tmp_path)
    for split, n in (("train", 2000), ("test", 500)):
        records = records_of(tmp_path, f"big/{split}.jsonl")
        digits = [d for r in records for d in r["meta"]["digits"]]
        frequencies = np.bincount(digits, minlength=10) / (4 * n)
        # the std of a frequency is at most 0.005 (train) and 0.01 (test); a uniform draw
        # would be 0.12 off for digit 0
        assert np.abs(frequencies - np.array(DEFAULT_PRIOR)).max() < 0.04, split


def test_a_given_prior_is_normalised_and_zero_weights_never_drawn(tmp_path):
    prior = [0, 0, 0, 0, 0, 0, 0, 0, 1, 3]
    spec = VisArithSpec.from_params(
        SPEC | {"digit_prior": prior, "tasks": [{"name": "t", "train": 200, "test": 1}]}
    )
    assert spec.digit_prior == (0.0,) * 8 + (0.25, 0.75)
    build_visarith(spec, tmp_path)
    digits = [d for r in records_of(tmp_path, "t/train.jsonl") for d in r["meta"]["digits"]]
    assert set(digits) == {8, 9} and abs(digits.count(9) / len(digits) - 0.75) < 0.06
    assert VisArithSpec.from_params(SPEC | {"digit_prior": None}).digit_prior == pytest.approx(
        DEFAULT_PRIOR
    )


def test_train_and_test_images_come_from_disjoint_pools(visarith):
    pools = split_pools(len(DIGITS.target))
    train, test = set(pools["train"].tolist()), set(pools["test"].tolist())
    assert not train & test and len(train | test) == len(DIGITS.target)
    assert max(train) < min(test) and abs(len(train) - 0.7 * len(DIGITS.target)) < 1
    assert test == set(digit_pools(len(DIGITS.target))["test"].tolist())
    for relative in FILES:
        pool = train if relative.endswith("train.jsonl") else test
        sources = {s for r in records_of(visarith.parent, relative) for s in r["meta"]["sources"]}
        assert sources <= pool, relative


def test_two_builds_give_the_same_bytes_and_tasks_draw_their_own_items(tmp_path, visarith):
    again = build_visarith(VisArithSpec.from_params(SPEC), tmp_path / "again")
    assert file_hashes(again.parent) == file_hashes(visarith.parent)
    assert len(file_hashes(again.parent)) == 2 + len(FILES)
    assert not (again.parent / "align.jsonl").exists()
    resized = SPEC | {"tasks": [SPEC["tasks"][0] | {"train": 5}, SPEC["tasks"][1]]}
    other = build_visarith(VisArithSpec.from_params(resized), tmp_path / "resized").parent
    for relative in FILES[1:]:  # the other parts keep their records, images and pixels
        assert without_images(records_of(other, relative)) == without_images(
            records_of(visarith.parent, relative)
        )
    old, new = (read_h5(root / "visarith.h5")["images"] for root in (visarith.parent, other))
    assert np.array_equal(old[24:], new[5:])
    first, second = (records_of(visarith.parent, f"{t}/train.jsonl") for t in ("sft", "rl"))
    assert [r["meta"]["digits"] for r in first[:16]] != [r["meta"]["digits"] for r in second]


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"colour": 1}, "colour"),
        ({"seed": -1}, "seed"),
        ({"seed": True}, "seed"),
        ({"noise": "loud"}, "noise"),
        ({"noise": float("nan")}, "noise"),
        ({"stroke_gain": [0.9, 0.5]}, "stroke_gain[1]"),
        ({"stroke_gain": [0.0, 0.5]}, "stroke_gain[0]"),
        ({"stroke_gain": 0.5}, "stroke_gain"),
        ({"tasks": []}, "tasks"),
        ({"tasks": {"name": "a", "train": 1, "test": 1}}, "tasks"),
        ({"tasks": ["sft"]}, "tasks[0]"),
        ({"tasks": [{"name": "a", "kind": "arith", "train": 1, "test": 1}]}, "tasks[0].kind"),
        ({"tasks": [{"name": "a b", "train": 1, "test": 1}]}, "tasks[0].name"),
        ({"tasks": [{"name": "align", "train": 1, "test": 1}]}, "tasks[0].name"),
        ({"tasks": [{"name": "a", "train": 0, "test": 1}]}, "tasks[0].train"),
        ({"tasks": [{"name": "a", "train": 1}]}, "tasks[0].test"),
        ({"tasks": [{"name": "a", "train": 1, "test": 1}] * 2}, "tasks[1].name"),
        ({"digit_prior": "skewed"}, "digit_prior"),
        ({"digit_prior": [0.1] * 9}, "digit_prior"),
        ({"digit_prior": [0] * 10}, "digit_prior"),
        ({"digit_prior": [0.1] * 9 + [-0.1]}, "digit_prior[9]"),
        ({"digit_prior": ["a"] + [0.1] * 9}, "digit_prior[0]"),
        ({"digit_prior": [0.1] * 9 + [float("inf")]}, "digit_prior[9]"),
    ],
)
def test_from_params_names_the_bad_key(change, key):
    with pytest.raises(ParamsError, match=re.escape(f"visarith spec: key '{key}': ")):
        VisArithSpec.from_params(SPEC | change)


@pytest.mark.parametrize("missing", ["seed", "noise", "stroke_gain", "tasks"])
def test_from_params_names_a_missing_key(missing):
    params = {k: v for k, v in SPEC.items() if k != missing}
    with pytest.raises(ParamsError, match=re.escape(f"visarith spec: key '{missing}': missing")):
        VisArithSpec.from_params(params)


def test_the_stream_loads_and_every_file_passes_the_check(visarith):
    stream = load_stream(visarith)
    assert stream.name == "visarith" and stream.align is None
    assert stream.images == visarith.parent / "visarith.h5"
    assert [(t.name, t.metric, len(t.train), len(t.test)) for t in stream.tasks] == [
        ("sft", "exact_match", 24, 10),
        ("rl", "exact_match", 16, 12),
    ]
    assert all(r.visual_needed for task in stream.tasks for r in task.train + task.test)
    for relative in FILES:
        assert check_file(visarith.parent / relative) == []


def test_the_tokenizer_of_the_vocabulary_round_trips_every_answer(visarith):
    spec = VisArithSpec.from_params(SPEC)
    words = vocabulary(spec)
    assert words == sorted(["add", "the", "digits", "see", ",", "+", "=", "so", *"0123456789"])
    assert vocabulary(VisArithSpec.from_params(SPEC | {"seed": 9})) == words
    tokenizer = build_tokenizer(words)
    answers = [
        r["conversations"][1]["value"] for f in FILES for r in records_of(visarith.parent, f)
    ]
    for text in [*answers, "add the digits", chain_answer([9, 9, 9, 9])]:
        ids = tokenizer(text).input_ids
        assert tokenizer.unk_token_id not in ids, text
        assert tokenizer.decode(ids, skip_special_tokens=True) == text
