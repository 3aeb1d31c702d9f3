"""The paper-scale theorem files: a small file written in NaturalProofs' JSON layout is read,
its bad entries are named and skipped, the split and limit are applied."""

from __future__ import annotations

import json

import pytest

from reprolab.studies.proofrank.naturalproofs import read_naturalproofs


def write(path, theorems, splits=None):
    data = {"dataset": {"theorems": theorems, "definitions": [], "others": []}}
    path.write_text(json.dumps({**data, "splits": splits or {}}))
    return path


THEOREMS = [
    {
        "id": 7,
        "type": "theorem",
        "label": "Sum of Odd Numbers",
        "categories": ["Number Theory"],
        "contents": ["The sum of the first $n$ odd numbers is $n^2$."],
        "proofs": [{"contents": ["By induction on $n$.", "Base case..."]}, {"contents": []}],
    },
    {"id": 8, "contents": ["No proof here."], "proofs": []},
    {"id": 9, "contents": "not a list", "proofs": []},
    {"id": 10, "contents": ["Another."], "proofs": [{"contents": ["Directly."]}]},
]


def label(texts):
    return ["induction" if "induction" in t else "direct" for t in texts]


def test_theorems_and_their_proofs_are_read_and_labelled(tmp_path):
    path = write(tmp_path / "np.json", THEOREMS)
    theorems, problems = read_naturalproofs(path, label)
    assert [t.theorem_id for t in theorems] == ["np-7", "np-10"]
    first = theorems[0]
    assert first.topic == "Number Theory" and first.statement.startswith("The sum")
    assert [(p.proof_id, p.technique, p.correct) for p in first.proofs] == [
        ("np-7-0", "induction", True)
    ]
    assert len(problems) == 1 and problems[0].item == "np-9" and "contents" in problems[0].message
    assert str(path) in str(problems[0])


def test_split_and_limit_choose_the_theorems(tmp_path):
    path = write(tmp_path / "np.json", THEOREMS, {"test": {"examples": [[10, 0]]}})
    assert [t.theorem_id for t in read_naturalproofs(path, label, split="test")[0]] == ["np-10"]
    assert [t.theorem_id for t in read_naturalproofs(path, label, limit=1)[0]] == ["np-7"]
    with pytest.raises(ValueError, match="split 'valid'"):
        read_naturalproofs(path, label, split="valid")


def test_a_file_of_another_layout_is_refused_by_name(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"theorems": []}))
    with pytest.raises(ValueError, match="other.json: not a NaturalProofs file"):
        read_naturalproofs(path, label)
