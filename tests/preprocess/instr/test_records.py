"""One record: what `record_problems` finds, and what a `Record` gives a training loop."""

from __future__ import annotations

import pytest

from reprolab.preprocess.instr.records import Record, record_problems
from tests.preprocess.instr.conftest import record


def test_a_good_record_has_no_problem():
    assert record_problems(record("a", "<image>\nwhat ?", "yes", image="x.png")) == []
    assert record_problems(record(7, "what ?", "no")) == []  # text-only, integer id
    two = record("b", "<image> and <image> ?", "same", image=["x.png", "y.png"])
    assert record_problems({**two, "task": "t", "eval": {"metric": "cider"}, "other": 1}) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": None}, "'id' is null, expected a string or an integer"),
        ({"id": True}, "'id' is a boolean, expected a string or an integer"),
        ({"image": 3}, "'image' is an integer, expected a string, a list of strings or null"),
        ({"image": ["a.png", 4]}, "'image' item 2 is an integer, expected a non-empty string"),
        ({"conversations": "hi"}, "'conversations' is a string, expected an array of turns"),
        ({"task": 3}, "'task' is an integer, expected a string"),
        ({"eval": {"name": "x"}}, "'eval' must be an object with a string 'metric'"),
        ({"meta": []}, "'meta' is an array, expected an object"),
        ({"meta": {"visual_needed": "yes"}}, "'meta.visual_needed' is a string, expected true"),
    ],
)
def test_each_bad_field_is_named(change, message):
    problems = record_problems({**record("a", "<image>\nq", "a", image="x.png"), **change})
    assert len(problems) == 1 and problems[0].startswith(message), problems


def test_turn_problems_say_which_turn_and_what_was_expected():
    good = record("a", "q", "a")
    turns = good["conversations"]
    cases = {
        "turn 2: 'from' is 'bot', expected 'human' or 'gpt'": [
            turns[0],
            {**turns[1], "from": "bot"},
        ],
        "turn 1 has no 'value' string": [{"from": "human"}, turns[1]],
        "turn 1 has no 'from', expected 'human'": [{"value": "q"}, turns[1]],
        "turn 2: 'from' is 'human', expected 'gpt'": [turns[0], turns[0]],
        "the last turn (3) is not a gpt answer": [*turns, turns[0]],
        "'conversations' has 1 turn(s)": [turns[0]],
        "turn 2 is a string, expected an object": [turns[0], "a"],
        "turn 2 (gpt) holds <image>": [turns[0], {"from": "gpt", "value": "<image>"}],
    }
    for message, conversation in cases.items():
        problems = record_problems({**good, "conversations": conversation})
        assert problems and problems[0].startswith(message), (message, problems)
    assert record_problems({"id": "a"}) == ["missing key 'conversations'"]
    assert record_problems([1]) == ["a record is an array, expected an object"]


def test_placeholders_must_match_images():
    assert record_problems(record("a", "<image> <image>", "x", image="a.png")) == [
        "2 <image> placeholders but 1 image(s)"
    ]
    assert record_problems(record("a", "<image> what ?", "x")) == [
        "1 <image> placeholder but 0 image(s)"
    ]
    assert record_problems(record("a", "what ?", "x", image=[])) == []


def test_image_problems_come_from_the_checker():
    seen = []

    def check(text):
        seen.append(text)
        return f"image '{text}' does not exist" if text == "b.png" else None

    obj = record("a", "<image><image>", "x", image=["a.png", "b.png"])
    assert record_problems(obj, check) == ["image 'b.png' does not exist"]
    assert seen == ["a.png", "b.png"]


def test_record_gives_prompt_answer_and_pairs():
    obj = record(12, "<image>\nfirst ?", "one", image="x.png")
    obj["conversations"] += [
        {"from": "human", "value": "second ?"},
        {"from": "gpt", "value": "two"},
    ]
    obj["meta"] = {"visual_needed": True, "kind": "k"}
    rec = Record.from_json(obj, task="stream-task", metric="vqa_acc")
    assert rec.id == "12" and rec.images == ("x.png",)
    assert (rec.prompt, rec.answer) == ("second ?", "two")
    assert rec.pairs == (("<image>\nfirst ?", "one"), ("second ?", "two"))
    assert (rec.task, rec.metric, rec.visual_needed) == ("stream-task", "vqa_acc", True)
    own = Record.from_json({**obj, "task": "own", "eval": {"metric": "cider"}}, "t", "m")
    assert (own.task, own.metric) == ("own", "cider")
    text_only = Record.from_json(record("t", "q ?", "a"))
    assert text_only.images == () and text_only.visual_needed is None and text_only.task is None
