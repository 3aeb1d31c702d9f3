"""Instruction records in the LLaVA conversation layout, as CoIN, MLLM-CL and UCIT ship them.

A record is a JSON object:

- `id`: a string or an integer (kept as a string);
- `image`: a string, a list of strings, or absent/null for a text-only record (see `images`);
- `conversations`: turns `{"from": "human"|"gpt", "value": str}`, alternating human, gpt, ...,
  starting with a human turn and ending with a gpt answer (so at least two turns);
- optional: `task` (str), `eval` (`{"metric": str}`) and `meta` (an object; `visual_needed`, when
  present, a boolean: the generator's ground truth of whether the answer needs the image).

Other keys are accepted and ignored (real benchmarks carry their own). The human turns hold one
`<image>` placeholder per image; gpt turns hold none. `record_problems` lists everything wrong
with one decoded object, each problem saying what was found and what was expected, so a file
check can report every defect of every record at once; `Record.from_json` builds the frozen
record from an object that has none.

`Record.prompt` and `Record.answer` are the last human turn and the gpt answer to it: a
single-turn QA loop uses those two; `Record.pairs` gives every (human, gpt) exchange of a
multi-turn record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

IMAGE_TOKEN = "<image>"
ROLES = ("human", "gpt")
_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


@dataclass(frozen=True)
class Record:
    """One instruction record: id, images (references), turns as (role, text), and labels."""

    id: str
    conversations: tuple[tuple[str, str], ...]
    images: tuple[str, ...] = ()
    task: str | None = None
    metric: str | None = None
    visual_needed: bool | None = None
    meta: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def prompt(self) -> str:
        """The text of the last human turn (the question `answer` answers)."""
        return self.conversations[-2][1]

    @property
    def answer(self) -> str:
        """The text of the last gpt turn."""
        return self.conversations[-1][1]

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Every (human text, gpt text) exchange, in order."""
        texts = [text for _, text in self.conversations]
        return tuple(zip(texts[0::2], texts[1::2], strict=True))

    @classmethod
    def from_json(
        cls,
        obj: Mapping[str, Any],
        task: str | None = None,
        metric: str | None = None,
        images: tuple[str, ...] | None = None,
    ) -> Record:
        """Build from an object without problems; `task`/`metric` fill a record that lacks
        them, `images` (e.g. resolved references) replaces the record's own."""
        meta = dict(obj.get("meta") or {})
        return cls(
            id=str(obj["id"]),
            conversations=tuple((t["from"], t["value"]) for t in obj["conversations"]),
            images=image_texts(obj) if images is None else images,
            task=obj.get("task", task),
            metric=(obj.get("eval") or {}).get("metric", metric),
            visual_needed=meta.get("visual_needed"),
            meta=meta,
        )


def json_type(value: Any) -> str:
    """How a JSON value's type is named in messages ('a string', 'an array', ...)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def image_texts(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The image references of a well-formed record, as written (empty when text-only)."""
    image = obj.get("image")
    if image is None:
        return ()
    return (image,) if isinstance(image, str) else tuple(image)


def _id_problems(obj: Mapping[str, Any]) -> list[str]:
    if "id" not in obj:
        return ["missing key 'id'"]
    value = obj["id"]
    if isinstance(value, bool) or not isinstance(value, str | int):
        return [f"'id' is {json_type(value)}, expected a string or an integer"]
    if value == "":
        return ["'id' is an empty string"]
    return []


def _image_problems(obj: Mapping[str, Any]) -> list[str]:
    image = obj.get("image")
    if image is None or isinstance(image, str):
        return ["'image' is an empty string"] if image == "" else []
    if not isinstance(image, list):
        return [f"'image' is {json_type(image)}, expected a string, a list of strings or null"]
    return [
        f"'image' item {i} is {json_type(item)}, expected a non-empty string"
        for i, item in enumerate(image, start=1)
        if not isinstance(item, str) or not item
    ]


def _turn_problems(turns: Any) -> list[str]:
    if not isinstance(turns, list):
        return [f"'conversations' is {json_type(turns)}, expected an array of turns"]
    if len(turns) < 2:
        return [f"'conversations' has {len(turns)} turn(s), expected a human turn then a gpt turn"]
    problems = []
    for number, turn in enumerate(turns, start=1):
        expected = ROLES[(number - 1) % 2]
        if not isinstance(turn, dict):
            problems.append(f"turn {number} is {json_type(turn)}, expected an object")
            continue
        role = turn.get("from")
        if role is None:
            problems.append(f"turn {number} has no 'from', expected '{expected}'")
        elif role not in ROLES:
            problems.append(f"turn {number}: 'from' is {role!r}, expected 'human' or 'gpt'")
        elif role != expected:
            problems.append(
                f"turn {number}: 'from' is '{role}', expected '{expected}' "
                "(turns alternate human, gpt, ...)"
            )
        if not isinstance(turn.get("value"), str):
            problems.append(f"turn {number} has no 'value' string")
        elif role == "gpt" and IMAGE_TOKEN in turn["value"]:
            problems.append(
                f"turn {number} (gpt) holds {IMAGE_TOKEN}; placeholders go in human turns"
            )
    if len(turns) % 2:
        problems.append(f"the last turn ({len(turns)}) is not a gpt answer")
    return problems


def _placeholder_problems(obj: Mapping[str, Any]) -> list[str]:
    """Placeholder count against image count (only for well-formed turns and images)."""
    turns = obj["conversations"]
    placeholders = sum(t["value"].count(IMAGE_TOKEN) for t in turns if t["from"] == "human")
    images = len(image_texts(obj))
    if placeholders == images:
        return []
    plural = "s" if placeholders != 1 else ""
    return [f"{placeholders} {IMAGE_TOKEN} placeholder{plural} but {images} image(s)"]


def _label_problems(obj: Mapping[str, Any]) -> list[str]:
    problems = []
    if "task" in obj and not isinstance(obj["task"], str):
        problems.append(f"'task' is {json_type(obj['task'])}, expected a string")
    if "eval" in obj:
        evaluation = obj["eval"]
        if not isinstance(evaluation, dict) or not isinstance(evaluation.get("metric"), str):
            problems.append("'eval' must be an object with a string 'metric'")
    meta = obj.get("meta")
    if meta is not None and not isinstance(meta, dict):
        problems.append(f"'meta' is {json_type(meta)}, expected an object")
    elif meta is not None and not isinstance(meta.get("visual_needed", False), bool):
        problems.append(
            f"'meta.visual_needed' is {json_type(meta['visual_needed'])}, expected true or false"
        )
    return problems


def record_problems(
    obj: Any, image_problem: Callable[[str], str | None] | None = None
) -> list[str]:
    """Everything wrong with one decoded record (empty when it is well formed).

    `image_problem(text)` checks one image reference (None when it resolves); without it the
    references are checked for their type only.
    """
    if not isinstance(obj, dict):
        return [f"a record is {json_type(obj)}, expected an object"]
    image_problems = _image_problems(obj)
    problems = _id_problems(obj) + image_problems
    if "conversations" not in obj:
        problems.append("missing key 'conversations'")
    else:
        turn_problems = _turn_problems(obj["conversations"])
        problems += turn_problems
        if not turn_problems and not image_problems:
            problems += _placeholder_problems(obj)
    problems += _label_problems(obj)
    if image_problem is not None and not image_problems:
        problems += [p for p in map(image_problem, image_texts(obj)) if p is not None]
    return problems
