"""SynthCIT: a small synthetic continual-instruction-tuning stream, written in the LLaVA layout.

Images are 16×16 gray canvases (background 0) with one scikit-learn digit (`load_digits`, 8×8,
values 0-16, bundled with the package) scaled to 0-255 by a stroke gain drawn from
`stroke_gain` and placed in one of the four 8×8 quadrants, plus Gaussian pixel noise of std
`noise` grey levels, rounded and clipped to uint8. The 1,797 digits are split, in the file's
order, into three disjoint contiguous pools: the first 20 % for alignment, the next 50 % for
the stream's training records, the last 30 % for test records (every pool holds 34-92 images
of each digit). scikit-learn does not say which writer drew which digit, so the pools are
disjoint images and, if the file is ordered by writer, mostly disjoint writers too.

Task kinds (every prompt starts with `<image>\\n`, every record has an image, answers are one
word except the caption's two, numbers are words, `meta.visual_needed` is the ground truth):

- `digit_id` (visual): "what digit is shown ?" → "zero".."nine", digits balanced;
- `arith` (text; the image is an unrelated digit): "what is three plus four ?" → "zero".."eighteen";
- `position` (visual): "where is the digit ?" → topleft/topright/bottomleft/bottomright, balanced;
- `compare` (text): "which is larger , three or seven ?" → the larger of two distinct numbers;
- `mixed`: half "is the digit a five ?" (visual), half "is three equal to five ?" (text), each
  half with as many "yes" as "no";
- `mixed_open`: half `digit_id` questions (visual), half `arith` questions (text), so the two
  halves share the number words as answers;
- `caption` (alignment only, visual): "describe the image ." → "seven topleft", digits balanced.

A task's items come from its own seed, `derive_seed(seed, "synthcit", name, split)`, so the same
kind twice under two names gives two different item sets, and resizing one task leaves the
others unchanged. `build_synthcit` writes `synthcit.h5` (dataset `images`, uint8 [N, 16, 16]:
alignment records first, then each task's train and test records in stream order),
`align.jsonl`, `<task>/train.jsonl`, `<task>/test.jsonl` (records point at
`h5:synthcit.h5#/images/<i>` from the top folder, `h5:../synthcit.h5#/...` from a task's) and,
last, `stream.yaml`; every file is written atomically and a rebuild gives the same bytes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from reprolab.core.arguments import output_folder
from reprolab.core.determinism import derive_seed
from reprolab.core.io import write_h5, write_text
from reprolab.core.params import ParamsError
from reprolab.core.progress import progress
from reprolab.preprocess.instr.images import H5_PREFIX
from reprolab.preprocess.instr.records import IMAGE_TOKEN
from reprolab.preprocess.instr.stream import ALIGN_TASK, Manifest, TaskFiles, write_stream

NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen"
).split()
DIGIT_WORDS = tuple(NUMBER_WORDS[:10])
QUADRANTS = ("topleft", "topright", "bottomleft", "bottomright")
CANVAS, CELL = 16, 8
POOLS = (("align", 0.2), ("train", 0.5), ("test", 0.3))
H5_NAME, DATASET, METRIC = "synthcit.h5", "images", "exact_match"
QUESTIONS = {
    "digit_id": ("what digit is shown ?",),
    "arith": ("what is {a} plus {b} ?",),
    "position": ("where is the digit ?",),
    "compare": ("which is larger , {a} or {b} ?",),
    "mixed": ("is the digit a {a} ?", "is {a} equal to {b} ?"),
    "mixed_open": ("what digit is shown ?", "what is {a} plus {b} ?"),
    "caption": ("describe the image .",),
}
ANSWERS = {
    "digit_id": DIGIT_WORDS,
    "arith": tuple(NUMBER_WORDS),
    "position": QUADRANTS,
    "compare": DIGIT_WORDS,
    "mixed": ("yes", "no"),
    "mixed_open": tuple(NUMBER_WORDS),
    "caption": DIGIT_WORDS + QUADRANTS,
}
TASK_KINDS = ("digit_id", "arith", "position", "compare", "mixed", "mixed_open")
ALIGN_KINDS = ("caption",)
_NAME = re.compile(r"[A-Za-z0-9_-]+")


class Named(Protocol):
    """Anything with a name (a task of a generator's spec)."""

    @property
    def name(self) -> str: ...


NamedT = TypeVar("NamedT", bound=Named)


@dataclass(frozen=True)
class SpecReader:
    """Reads the values of a synthetic generator's spec (shared by every generator of the
    family): each ParamsError it raises starts `<generator> spec: key '<key>':` and says what
    was found and what was expected."""

    generator: str

    def error(self, key: str, message: str) -> ParamsError:
        """The ParamsError for a bad value of `key`."""
        return ParamsError(f"{self.generator} spec: key '{key}': {message}")

    def keys(self, mapping: Any, required: set[str], optional: set[str], where: str) -> None:
        """Refuse a non-mapping, an unknown key or a missing one (`where` prefixes the keys)."""
        if not isinstance(mapping, Mapping):
            raise self.error(where.rstrip(".") or "(top)", "not a mapping")
        for key in mapping:
            if key not in required | optional:
                expected = ", ".join(sorted(required | optional))
                raise self.error(f"{where}{key}", f"unknown (expected {expected})")
        missing = sorted(required - set(mapping))
        if missing:
            raise self.error(f"{where}{missing[0]}", "missing")

    def integer(self, value: Any, key: str, minimum: int) -> int:
        """`value` if it is an integer (not a bool) >= `minimum`."""
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(key, f"{value!r}, expected an integer >= {minimum}")
        return value

    def number(self, value: Any, key: str, low: float, high: float | None) -> float:
        """`value` as a float if it is a finite number in [low, high] (no upper bound: None)."""
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or value < low or (high is not None and value > high):
            bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
            raise self.error(key, f"{value!r}, expected a number {bound}")
        return float(value)

    def choice(self, value: Any, key: str, choices: Sequence[str]) -> str:
        """`value` if it is one of `choices`."""
        if value not in choices:
            raise self.error(key, f"{value!r}, expected one of {', '.join(choices)}")
        return value

    def name(self, value: Any, key: str) -> str:
        """`value` if it is a usable task name (a folder and an id prefix)."""
        if not isinstance(value, str) or not _NAME.fullmatch(value):
            raise self.error(key, f"{value!r}, expected letters, digits, '_' or '-'")
        return value

    def gain(self, value: Any, key: str) -> tuple[float, float]:
        """A stroke gain range `[low, high]` with 0 < low <= high <= 1."""
        if not (isinstance(value, list | tuple) and len(value) == 2):
            raise self.error(key, f"expected [low, high], got {value}")
        low = self.number(value[0], f"{key}[0]", 0.0, 1.0)
        high = self.number(value[1], f"{key}[1]", low, 1.0)
        if low <= 0:
            raise self.error(f"{key}[0]", "must be > 0")
        return low, high

    def tasks(self, value: Any, key: str, read: Callable[[Any, str], NamedT]) -> tuple[NamedT, ...]:
        """A non-empty list of tasks, each read by `read(task, where)`, with distinct names none
        of which is the alignment's."""
        if not isinstance(value, list) or not value:
            raise self.error(key, "expected a non-empty list of tasks")
        tasks = tuple(read(task, f"{key}[{i}]") for i, task in enumerate(value))
        names = [task.name for task in tasks]
        for i, name in enumerate(names):
            if name in names[:i] or name == ALIGN_TASK:
                raise self.error(f"{key}[{i}].name", f"'{name}' is taken")
        return tasks


_READ = SpecReader("synthcit")


@dataclass(frozen=True)
class TaskSpec:
    """One task of the stream: its name (folder and id prefix), kind and record counts."""

    name: str
    kind: str
    train: int
    test: int


@dataclass(frozen=True)
class AlignSpec:
    """The alignment records: their kind and count."""

    kind: str
    n: int


@dataclass(frozen=True)
class SynthCITSpec:
    """What `build_synthcit` makes: seed, pixel noise, stroke gain range, tasks, alignment."""

    seed: int
    noise: float
    stroke_gain: tuple[float, float]
    tasks: tuple[TaskSpec, ...]
    align: AlignSpec | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SynthCITSpec:
        """Build from a params mapping; ParamsError naming the key for a missing, unknown or
        bad value (`align` may be absent or null)."""
        _READ.keys(params, {"seed", "noise", "stroke_gain", "tasks"}, {"align"}, "")
        stroke_gain = _READ.gain(params["stroke_gain"], "stroke_gain")
        tasks = _READ.tasks(params["tasks"], "tasks", _task)
        align = params.get("align")
        if align is not None:
            _READ.keys(align, {"kind", "n"}, set(), "align.")
            align = AlignSpec(
                _READ.choice(align["kind"], "align.kind", ALIGN_KINDS),
                _READ.integer(align["n"], "align.n", 1),
            )
        return cls(
            seed=_READ.integer(params["seed"], "seed", 0),
            noise=_READ.number(params["noise"], "noise", 0.0, None),
            stroke_gain=stroke_gain,
            tasks=tasks,
            align=align,
        )


def _task(task: Any, where: str) -> TaskSpec:
    _READ.keys(task, {"name", "kind", "train", "test"}, set(), f"{where}.")
    return TaskSpec(
        name=_READ.name(task["name"], f"{where}.name"),
        kind=_READ.choice(task["kind"], f"{where}.kind", TASK_KINDS),
        train=_READ.integer(task["train"], f"{where}.train", 1),
        test=_READ.integer(task["test"], f"{where}.test", 1),
    )


def vocabulary(spec: SynthCITSpec) -> list[str]:
    """Every word the generator can write for `spec` (prompts and answers), sorted; the
    `<image>` placeholder is not a word (see `records.IMAGE_TOKEN`)."""
    kinds = [task.kind for task in spec.tasks] + ([spec.align.kind] if spec.align else [])
    words: set[str] = set()
    for kind in kinds:
        for question in QUESTIONS[kind]:
            words.update(w for w in question.split() if not w.startswith("{"))
            if "{" in question:
                words.update(DIGIT_WORDS)
        words.update(ANSWERS[kind])
    return sorted(words)


@dataclass(frozen=True)
class Item:
    """One generated question: text, answer, whether the image matters, the image's content."""

    question: str
    answer: str
    visual: bool
    digit: int
    quadrant: int


def _balanced(rng: np.random.Generator, values: int, n: int) -> np.ndarray:
    """`n` values in range(values), each as often as possible, in random order."""
    return rng.permutation(np.resize(np.arange(values), n))


def _other(rng: np.random.Generator, value: int) -> int:
    """A digit different from `value`, uniform over the other nine."""
    return int((value + rng.integers(1, 10)) % 10)


def _digit_id(rng: np.random.Generator, n: int) -> list[Item]:
    digits, quadrants = _balanced(rng, 10, n), rng.integers(0, 4, size=n)
    question = QUESTIONS["digit_id"][0]
    return [
        Item(question, NUMBER_WORDS[d], True, int(d), int(q))
        for d, q in zip(digits, quadrants, strict=True)
    ]


def _caption(rng: np.random.Generator, n: int) -> list[Item]:
    digits, quadrants = _balanced(rng, 10, n), rng.integers(0, 4, size=n)
    question = QUESTIONS["caption"][0]
    return [
        Item(question, f"{NUMBER_WORDS[d]} {QUADRANTS[q]}", True, int(d), int(q))
        for d, q in zip(digits, quadrants, strict=True)
    ]


def _position(rng: np.random.Generator, n: int) -> list[Item]:
    digits, quadrants = rng.integers(0, 10, size=n), _balanced(rng, 4, n)
    question = QUESTIONS["position"][0]
    return [
        Item(question, QUADRANTS[q], True, int(d), int(q))
        for d, q in zip(digits, quadrants, strict=True)
    ]


def _arith(rng: np.random.Generator, n: int) -> list[Item]:
    items = []
    for _ in range(n):
        a, b, d, q = (int(v) for v in rng.integers(0, [10, 10, 10, 4]))
        question = QUESTIONS["arith"][0].format(a=NUMBER_WORDS[a], b=NUMBER_WORDS[b])
        items.append(Item(question, NUMBER_WORDS[a + b], False, d, q))
    return items


def _compare(rng: np.random.Generator, n: int) -> list[Item]:
    items = []
    for _ in range(n):
        a, d, q = (int(v) for v in rng.integers(0, [10, 10, 4]))
        b = _other(rng, a)
        question = QUESTIONS["compare"][0].format(a=NUMBER_WORDS[a], b=NUMBER_WORDS[b])
        items.append(Item(question, NUMBER_WORDS[max(a, b)], False, d, q))
    return items


def _mixed(rng: np.random.Generator, n: int) -> list[Item]:
    """Half visual, half text questions; within each half as many "yes" as "no"."""
    visual = _balanced(rng, 2, n).astype(bool)
    yes = np.zeros(n, dtype=bool)
    for part in (visual, ~visual):
        yes[part] = _balanced(rng, 2, int(part.sum())).astype(bool)
    items = []
    for is_visual, is_yes in zip(visual, yes, strict=True):
        a, d, q = (int(v) for v in rng.integers(0, [10, 10, 4]))
        answer = "yes" if is_yes else "no"
        if is_visual:
            asked = d if is_yes else _other(rng, d)
            question = QUESTIONS["mixed"][0].format(a=NUMBER_WORDS[asked])
        else:
            b = a if is_yes else _other(rng, a)
            question = QUESTIONS["mixed"][1].format(a=NUMBER_WORDS[a], b=NUMBER_WORDS[b])
        items.append(Item(question, answer, bool(is_visual), d, q))
    return items


def _mixed_open(rng: np.random.Generator, n: int) -> list[Item]:
    """Half `digit_id` questions (visual), half `arith` questions (text), in a shuffled order:
    one task whose samples differ in whether they need the image but share the number words
    as answers."""
    visual = _balanced(rng, 2, n).astype(bool)
    seen = iter(_digit_id(rng, int(visual.sum())))
    text = iter(_arith(rng, int((~visual).sum())))
    return [next(seen) if is_visual else next(text) for is_visual in visual]


_MAKERS = {
    "digit_id": _digit_id,
    "arith": _arith,
    "position": _position,
    "compare": _compare,
    "mixed": _mixed,
    "mixed_open": _mixed_open,
    "caption": _caption,
}


def make_items(kind: str, n: int, rng: np.random.Generator) -> list[Item]:
    """`n` items of `kind` drawn with `rng` (the image's digit and quadrant included)."""
    if kind not in _MAKERS:
        raise ValueError(f"unknown task kind {kind!r}, expected one of {', '.join(_MAKERS)}")
    return _MAKERS[kind](rng, n)


def digit_pools(count: int) -> dict[str, np.ndarray]:
    """Indices into the `count` digits of `load_digits()` of the alignment, train and test
    pools (disjoint, contiguous, in that order)."""
    pools, start = {}, 0
    for i, (name, fraction) in enumerate(POOLS):
        stop = count if i == len(POOLS) - 1 else start + int(round(fraction * count))
        pools[name] = np.arange(start, stop)
        start = stop
    return pools


def render(
    placements: Sequence[tuple[np.ndarray, int, float]], noise: float, rng: np.random.Generator
) -> np.ndarray:
    """A uint8 16×16 canvas (background 0) holding, for each `(digit, quadrant, gain)` of
    `placements`, the 8×8 `digit` (values 0-16) scaled to 0-255 by `gain` in `quadrant`
    (0-3 in reading order), plus Gaussian noise of std `noise`, rounded and clipped."""
    canvas = np.zeros((CANVAS, CANVAS))
    for digit, quadrant, gain in placements:
        row, col = divmod(quadrant, 2)
        canvas[row * CELL : (row + 1) * CELL, col * CELL : (col + 1) * CELL] = (
            digit * (255 / 16) * gain
        )
    canvas += rng.normal(0.0, noise, size=canvas.shape)
    return np.clip(np.rint(canvas), 0, 255).astype(np.uint8)


def _part(
    spec: SynthCITSpec,
    kind: str,
    n: int,
    seed_parts: tuple[str, ...],
    pool: np.ndarray,
    digits: Any,
) -> tuple[list[Item], list[int], np.ndarray]:
    """Items of one (task, split), the digit image each one shows, and their canvases."""
    rng = np.random.default_rng(derive_seed(spec.seed, "synthcit", *seed_parts))
    items = make_items(kind, n, rng)
    by_class = [pool[digits.target[pool] == c] for c in range(10)]
    sources = [int(rng.choice(by_class[item.digit])) for item in items]
    gains = rng.uniform(*spec.stroke_gain, size=n)
    canvases = np.stack(
        [
            render([(digits.images[s], item.quadrant, float(g))], spec.noise, rng)
            for item, s, g in zip(items, sources, gains, strict=True)
        ]
    )
    return items, sources, canvases


def _record(
    record_id: str, image: str, task: str, kind: str, item: Item, source: int
) -> dict[str, Any]:
    return {
        "id": record_id,
        "image": image,
        "conversations": [
            {"from": "human", "value": f"{IMAGE_TOKEN}\n{item.question}"},
            {"from": "gpt", "value": item.answer},
        ],
        "task": task,
        "eval": {"metric": METRIC},
        "meta": {
            "visual_needed": item.visual,
            "kind": kind,
            "digit": item.digit,
            "quadrant": QUADRANTS[item.quadrant],
            "source": source,
        },
    }


def build_synthcit(spec: SynthCITSpec, out_dir: str | Path, show_progress: bool = False) -> Path:
    """Write the stream of `spec` into `out_dir`; return the path of its `stream.yaml`."""
    from sklearn.datasets import load_digits

    out_dir = output_folder("--out", out_dir)
    digits = load_digits()
    pools = digit_pools(len(digits.target))
    parts = [(ALIGN_TASK, None, spec.align.kind, spec.align.n)] if spec.align else []
    for task in spec.tasks:
        parts += [
            (task.name, "train", task.kind, task.train),
            (task.name, "test", task.kind, task.test),
        ]
    files: dict[str, str] = {}
    canvases, offset = [], 0
    for name, split, kind, n in progress(parts, "synthcit", show_progress):
        seed_parts = (name,) if split is None else (name, split)
        items, sources, images = _part(spec, kind, n, seed_parts, pools[split or "align"], digits)
        relative = f"{name}/{split}.jsonl" if split else f"{name}.jsonl"
        h5_file = H5_NAME if split is None else f"../{H5_NAME}"
        lines = [
            _record(
                f"{name}-{i:05d}" if split is None else f"{name}-{split}-{i:05d}",
                f"{H5_PREFIX}{h5_file}#/{DATASET}/{offset + i}",
                name,
                kind,
                item,
                source,
            )
            for i, (item, source) in enumerate(zip(items, sources, strict=True))
        ]
        files[relative] = "".join(json.dumps(line) + "\n" for line in lines)
        canvases.append(images)
        offset += n
    align = f"{ALIGN_TASK}.jsonl" if spec.align else None
    tasks = [task.name for task in spec.tasks]
    return write_generated(
        out_dir, "synthcit", H5_NAME, np.concatenate(canvases), files, tasks, align
    )


def write_generated(
    out_dir: Path,
    name: str,
    h5_name: str,
    images: np.ndarray,
    files: Mapping[str, str],
    tasks: Sequence[str],
    align: str | None = None,
) -> Path:
    """Write a generated stream into `out_dir`: its canvases (dataset `images` of `h5_name`),
    its record files (relative path -> JSONL text; a task's at `<task>/train.jsonl` and
    `<task>/test.jsonl`) and, last, the manifest named `name`, so a `stream.yaml` on disk means
    a complete stream. Every file atomically; returns the manifest's path."""
    write_h5(out_dir / h5_name, {DATASET: images})
    for relative, text in files.items():
        write_text(out_dir / relative, text)
    manifest = Manifest(
        name=name,
        tasks=tuple(
            TaskFiles(task, f"{task}/train.jsonl", f"{task}/test.jsonl", METRIC) for task in tasks
        ),
        align=align,
        images=h5_name,
    )
    write_stream(out_dir / "stream.yaml", manifest)
    return out_dir / "stream.yaml"
