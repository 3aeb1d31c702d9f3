"""CounterFact and zsRE files, in the JSON that ROME and MEMIT release, read into edit requests:
every field of a good record, bad records skipped with a message naming file and index, files
that are not JSON arrays refused, and `limit` keeping a prefix of the good requests."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from reprolab.studies.nas.counterfact import ReadResult, read_counterfact, read_zsre
from reprolab.studies.nas.requests import EditRequest


def counterfact_record(case_id: int, subject: str = "Danielle Darrieux") -> dict:
    """A CounterFact record as `counterfact.json` has it."""
    return {
        "case_id": case_id,
        "pararel_idx": 2796,
        "requested_rewrite": {
            "prompt": "The mother tongue of {} is",
            "relation_id": "P103",
            "subject": subject,
            "target_new": {"str": "English", "id": "Q1860"},
            "target_true": {"str": "Français", "id": "Q150"},
        },
        "paraphrase_prompts": [
            "Shayna does this and Yossel goes still and dies. Danielle Darrieux, a native",
            "An album was recorded for Capitol Nashville. Danielle Darrieux speaks",
        ],
        "neighborhood_prompts": [
            "The mother tongue of Léon Blum is",
            "Émile Zola, speaker of",
        ],
        "attribute_prompts": ["J. R. R. Tolkien is a native speaker of"],
        "generation_prompts": ["Danielle Darrieux's mother tongue is"],
    }


def zsre_record(subject: str = "Antonín Dvořák") -> dict:
    """A zsRE record as MEMIT's `zsre_mend_eval.json` has it."""
    return {
        "subject": subject,
        "src": f"What university did {subject} attend?",
        "pred": "Prague Conservatory",
        "rephrase": f"What university did {subject} go to?",
        "alt": "University of Michigan",
        "answers": ["Prague Organ School", "Organ School"],
        "loc": "nq question: who played desmond doss father in hacksaw ridge",
        "loc_ans": "Hugo Weaving",
        "cond": "Prague Conservatory >> University of Michigan || What university did ...",
    }


def write(path: Path, data: object, ensure_ascii: bool = False) -> Path:
    """Write `data` as UTF-8 JSON to `path`."""
    path.write_text(json.dumps(data, ensure_ascii=ensure_ascii), encoding="utf-8")
    return path


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_a_counterfact_record_becomes_its_request(tmp_path, ensure_ascii):
    path = write(tmp_path / "counterfact.json", [counterfact_record(7)], ensure_ascii)
    result = read_counterfact(path)
    assert result == ReadResult(
        requests=(
            EditRequest(
                case="7",
                subject="Danielle Darrieux",
                prompt="The mother tongue of {} is",
                target_new="English",
                target_true="Français",
                paraphrases=(
                    "Shayna does this and Yossel goes still and dies. Danielle Darrieux, a native",
                    "An album was recorded for Capitol Nashville. Danielle Darrieux speaks",
                ),
                neighbours=(
                    ("The mother tongue of Léon Blum is", "Français"),
                    ("Émile Zola, speaker of", "Français"),
                ),
                candidates=("English", "Français"),
            ),
        ),
        skipped=(),
    )
    assert result.requests[0].rewrite() == "The mother tongue of Danielle Darrieux is"


def test_a_zsre_record_becomes_its_request_with_its_index_as_case(tmp_path):
    records = [zsre_record("Watts Humphrey"), zsre_record()]
    result = read_zsre(write(tmp_path / "zsre_mend_eval.json", records))
    assert result.skipped == ()
    assert result.requests[1] == EditRequest(
        case="1",
        subject="Antonín Dvořák",
        prompt="What university did {} attend?",
        target_new="University of Michigan",
        target_true="Prague Organ School",
        paraphrases=("What university did Antonín Dvořák go to?",),
        neighbours=(
            ("nq question: who played desmond doss father in hacksaw ridge", "Hugo Weaving"),
        ),
        candidates=("University of Michigan", "Prague Organ School"),
    )
    assert result.requests[1].subject_prefix() == "What university did Antonín Dvořák"
    assert result.requests[0].case == "0"


DELETE = object()
"""`spoil`'s value for a key to delete."""


def spoil(record: dict, keys: tuple[str, ...], value: object) -> dict:
    """A copy of `record` with the value at `keys` set to `value` (deleted when it is DELETE)."""
    record = copy.deepcopy(record)
    inner = record
    for key in keys[:-1]:
        inner = inner[key]
    if value is DELETE:
        del inner[keys[-1]]
    else:
        inner[keys[-1]] = value
    return record


@pytest.mark.parametrize(
    ("keys", "value", "message"),
    [
        (("requested_rewrite", "subject"), DELETE, "missing key 'requested_rewrite.subject'"),
        (("requested_rewrite", "target_new"), "English", "'requested_rewrite.target_new' is a"),
        (("case_id",), "3", "'case_id' is '3'; expected an integer"),
        (("neighborhood_prompts",), "The mother tongue of", "expected a list of strings"),
        (("paraphrase_prompts",), ["ok", 3], "expected a list of strings"),
        (("requested_rewrite", "target_new", "str"), "Français", "target_new equals target_true"),
        (("requested_rewrite", "prompt"), "The mother tongue of", "needs one '{}'"),
        (("requested_rewrite", "prompt"), "{} speaks {language}", "a brace besides"),
    ],
)
def test_a_bad_counterfact_record_is_skipped_and_named(tmp_path, keys, value, message):
    records = [counterfact_record(0), spoil(counterfact_record(1), keys, value)]
    records.append(counterfact_record(2, "Ōe Kenzaburō"))
    path = write(tmp_path / "counterfact.json", records)
    result = read_counterfact(path)
    assert [r.case for r in result.requests] == ["0", "2"]
    assert result.requests[1].subject == "Ōe Kenzaburō"
    assert len(result.skipped) == 1
    assert result.skipped[0].startswith(f"{path}: record 1: ")
    assert message in result.skipped[0]


def test_a_counterfact_record_that_is_not_an_object_is_skipped(tmp_path):
    path = write(tmp_path / "counterfact.json", [["not", "a", "record"], counterfact_record(5)])
    result = read_counterfact(path)
    assert [r.case for r in result.requests] == ["5"]
    assert result.skipped == (f"{path}: record 0: the record is a JSON array; expected an object",)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"src": "What university did he attend?"}, "occurs 0 times in 'src'"),
        ({"src": "Did Antonín Dvořák teach Antonín Dvořák?"}, "occurs 2 times in 'src'"),
        ({"alt": "Prague Organ School"}, "'alt' 'Prague Organ School' equals 'answers'[0]"),
        ({"answers": []}, "expected a first answer"),
        ({"loc_ans": None}, "'loc_ans' is None; expected a non-empty string"),
        ({"src": "Which {school} did Antonín Dvořák attend?"}, "a brace besides"),
    ],
)
def test_a_bad_zsre_record_is_skipped_and_named(tmp_path, change, message):
    records = [
        zsre_record("Watts Humphrey"),
        zsre_record() | change,
        zsre_record("Søren Kierkegaard"),
    ]
    path = write(tmp_path / "zsre_mend_eval.json", records)
    result = read_zsre(path)
    assert [r.case for r in result.requests] == ["0", "2"]
    assert len(result.skipped) == 1
    assert result.skipped[0].startswith(f"{path}: record 1: ")
    assert message in result.skipped[0]


def test_a_zsre_record_missing_a_key_is_skipped(tmp_path):
    record = zsre_record()
    del record["rephrase"]
    path = write(tmp_path / "zsre_mend_eval.json", [record])
    assert read_zsre(path) == ReadResult((), (f"{path}: record 0: missing key 'rephrase'",))


@pytest.mark.parametrize("reader", [read_counterfact, read_zsre])
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"case_id": 0,', "not valid JSON"),
        ('{"case_id": 0}', "a JSON object; expected a JSON array"),
        ('"counterfact"', "a JSON string; expected a JSON array"),
    ],
)
def test_a_file_that_is_not_a_json_array_is_refused_naming_it(tmp_path, reader, text, message):
    path = tmp_path / "données.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(path)) + ".*" + re.escape(message)):
        reader(path)


@pytest.mark.parametrize(
    ("limit", "cases", "skips"),
    [
        (None, ["0", "2", "3", "4"], 1),
        (0, [], 0),
        (1, ["0"], 0),
        (2, ["0", "2"], 1),
        (9, ["0", "2", "3", "4"], 1),
    ],
)
def test_limit_keeps_the_first_good_requests(tmp_path, limit, cases, skips):
    records = [counterfact_record(k) for k in range(5)]
    records[1] = spoil(records[1], ("requested_rewrite",), DELETE)
    path = write(tmp_path / "counterfact.json", records)
    result = read_counterfact(path, limit=limit)
    assert [r.case for r in result.requests] == cases
    assert len(result.skipped) == skips


def test_limit_counts_good_zsre_requests_and_refuses_a_negative_limit(tmp_path):
    records = [zsre_record() | {"alt": "Prague Organ School"}] + [zsre_record()] * 3
    path = write(tmp_path / "zsre_mend_eval.json", records)
    assert [r.case for r in read_zsre(path, limit=2).requests] == ["1", "2"]
    with pytest.raises(ValueError, match="negative"):
        read_zsre(path, limit=-1)
