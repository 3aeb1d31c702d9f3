"""Readers of the paper-scale edit datasets, CounterFact and zsRE, in the JSON that ROME and
MEMIT release (kmeng01/rome and kmeng01/memit, `dsets/`), each record becoming an `EditRequest`.

CounterFact (`counterfact.json`; MEMIT's `multi_counterfact.json` has the same shape) is a JSON
array of ``{"case_id", "pararel_idx", "requested_rewrite": {"prompt", "relation_id",
"subject", "target_new": {"str", "id"}, "target_true": {"str", "id"}}, "paraphrase_prompts",
"neighborhood_prompts", "attribute_prompts", "generation_prompts"}``. The request is
`requested_rewrite` as it stands (its prompt already holds ``{}``), case ``str(case_id)``, its
paraphrases `paraphrase_prompts`, and its neighbours `neighborhood_prompts` each with
`target_true`: CounterFact picks its neighbourhood subjects among those sharing the true object.
`pararel_idx`, the Wikidata ids and the attribute and generation prompts are not read.

zsRE, as ROME and MEMIT release it (`zsre_mend_eval.json`, MEND's zsRE evaluation slice), is a
JSON array of ``{"subject", "src", "pred", "rephrase", "alt", "answers", "loc", "loc_ans",
"cond"}``. The prompt is `src` with its subject replaced by ``{}`` (MEMIT's choice), which needs
the subject exactly once in `src`; the request edits `answers[0]` into `alt`, with `rephrase` as
its one paraphrase and (`loc`, `loc_ans`) as its one neighbour, `loc` as it stands ("nq
question: ..."); the case is the record's index in the file. `pred` and `cond` are not read.
This differs from ROME and MEMIT's own loader, which ignores `alt`, edits to `answers[0]` with
no true object ("<|endoftext|>") and appends "?" to `loc`: it scores the tokens of one answer,
where an `EditRequest` compares two answers.

Both formats give candidates (target_new, target_true). A bad record (a missing key, a value of
the wrong type, a zsRE subject not once in `src`, `alt` equal to `answers[0]`, a prompt with a
brace besides its ``{}``, or anything `EditRequest` refuses) is skipped with a message naming
the file, the record's index and what is wrong, and the rest are read; a file that is not a
JSON array raises ValueError. `limit` keeps the first `limit` good requests, as the paper
configs edit a prefix of the stream; the records after them are not looked at.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reprolab.core.io import read_json
from reprolab.studies.nas.requests import EditRequest


@dataclass(frozen=True)
class ReadResult:
    """The good requests of a file, in file order, and one message per skipped bad record."""

    requests: tuple[EditRequest, ...]
    skipped: tuple[str, ...]


def read_counterfact(path: str | Path, limit: int | None = None) -> ReadResult:
    """The requests of a CounterFact file (module docstring), at most `limit` of them."""
    return _read(path, limit, _counterfact_request, "CounterFact records")


def read_zsre(path: str | Path, limit: int | None = None) -> ReadResult:
    """The requests of MEMIT's zsRE file (module docstring), at most `limit` of them."""
    return _read(path, limit, _zsre_request, "zsRE records")


def _read(
    path: str | Path,
    limit: int | None,
    parse: Callable[[object, int], EditRequest],
    records: str,
) -> ReadResult:
    """Parse each record of the JSON array at `path` with `parse` (record, index), skipping
    those it refuses with ValueError, until `limit` requests; ValueError naming the file when it
    is not a JSON array (of `records`) or `limit` is negative."""
    path = Path(path)
    if limit is not None and limit < 0:
        raise ValueError(f"{path}: limit {limit} is negative")
    try:
        data = read_json(path)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc}); expected a JSON array") from exc
    if not isinstance(data, list):
        raise ValueError(f"{path}: a JSON {_kind(data)}; expected a JSON array of {records}")
    requests: list[EditRequest] = []
    skipped: list[str] = []
    for index, record in enumerate(data):
        if limit is not None and len(requests) >= limit:
            break
        try:
            requests.append(parse(record, index))
        except ValueError as exc:
            skipped.append(f"{path}: record {index}: {exc}")
    return ReadResult(tuple(requests), tuple(skipped))


def _counterfact_request(record: object, index: int) -> EditRequest:
    """The request of one CounterFact record; ValueError saying what is wrong with it."""
    case_id = _field(record, ("case_id",))
    if not isinstance(case_id, int) or isinstance(case_id, bool):
        raise ValueError(f"'case_id' is {reprlib.repr(case_id)}; expected an integer")
    rewrite = ("requested_rewrite",)
    target_true = _text(record, (*rewrite, "target_true", "str"))
    return _request(
        case=str(case_id),
        subject=_text(record, (*rewrite, "subject")),
        prompt=_text(record, (*rewrite, "prompt")),
        target_new=_text(record, (*rewrite, "target_new", "str")),
        target_true=target_true,
        paraphrases=_texts(record, ("paraphrase_prompts",)),
        neighbours=tuple((p, target_true) for p in _texts(record, ("neighborhood_prompts",))),
    )


def _zsre_request(record: object, index: int) -> EditRequest:
    """The request of the zsRE record at `index`; ValueError saying what is wrong with it."""
    subject = _text(record, ("subject",))
    src = _text(record, ("src",))
    times = src.count(subject)
    if times != 1:
        raise ValueError(
            f"subject {subject!r} occurs {times} times in 'src' {src!r}; expected once"
        )
    alt = _text(record, ("alt",))
    answers = _texts(record, ("answers",))
    if not answers or not answers[0]:
        raise ValueError(f"'answers' is {reprlib.repr(list(answers))}; expected a first answer")
    if alt == answers[0]:
        raise ValueError(f"'alt' {alt!r} equals 'answers'[0]: nothing to edit")
    return _request(
        case=str(index),
        subject=subject,
        prompt=src.replace(subject, "{}"),
        target_new=alt,
        target_true=answers[0],
        paraphrases=(_text(record, ("rephrase",)),),
        neighbours=((_text(record, ("loc",)), _text(record, ("loc_ans",))),),
    )


def _request(
    case: str,
    subject: str,
    prompt: str,
    target_new: str,
    target_true: str,
    paraphrases: tuple[str, ...],
    neighbours: tuple[tuple[str, str], ...],
) -> EditRequest:
    """An `EditRequest` with candidates (target_new, target_true), refusing (ValueError) a
    prompt with a brace besides its ``{}``, which `EditRequest.rewrite` could not fill in."""
    request = EditRequest(
        case=case,
        subject=subject,
        prompt=prompt,
        target_new=target_new,
        target_true=target_true,
        paraphrases=paraphrases,
        neighbours=neighbours,
        candidates=(target_new, target_true),
    )
    rest = prompt.replace("{}", "")
    if "{" in rest or "}" in rest:
        raise ValueError(f"prompt {prompt!r} has a brace besides its '{{}}'")
    return request


def _field(record: object, keys: tuple[str, ...]) -> object:
    """The value at `keys`, a path of object keys, in `record`; ValueError naming the key that
    is missing or the value on the way that is not an object."""
    value = record
    for depth, key in enumerate(keys):
        if not isinstance(value, dict):
            where = _name(keys[:depth]) if depth else "the record"
            raise ValueError(f"{where} is a JSON {_kind(value)}; expected an object")
        if key not in value:
            raise ValueError(f"missing key {_name(keys[: depth + 1])}")
        value = value[key]
    return value


def _text(record: object, keys: tuple[str, ...]) -> str:
    """The non-empty string at `keys` in `record` (`_field`); ValueError otherwise."""
    value = _field(record, keys)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{_name(keys)} is {reprlib.repr(value)}; expected a non-empty string")
    return value


def _texts(record: object, keys: tuple[str, ...]) -> tuple[str, ...]:
    """The list of strings at `keys` in `record` (`_field`), as a tuple; ValueError otherwise."""
    value = _field(record, keys)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{_name(keys)} is {reprlib.repr(value)}; expected a list of strings")
    return tuple(value)


def _name(keys: tuple[str, ...]) -> str:
    """How a message names the key path `keys`: 'requested_rewrite.target_new.str'."""
    return repr(".".join(keys))


def _kind(value: object) -> str:
    """The JSON name of `value`'s type, for messages."""
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")
