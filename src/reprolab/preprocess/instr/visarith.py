"""VisArith: a synthetic read-then-add instruction stream in the LLaVA layout (credit-assignment
smoke data for RL on vision-language models).

Each image is a uint8 16×16 grey canvas (background 0) holding four scikit-learn digits
(`load_digits`, 8×8, values 0-16), one per 8×8 quadrant in reading order (top-left, top-right,
bottom-left, bottom-right), each scaled to 0-255 by its own stroke gain drawn uniformly from
`stroke_gain`, plus Gaussian pixel noise of std `noise` grey levels, rounded and clipped (drawn
by `synthcit.render`, so both generators make their canvases the same way). With the tiny
LLaVA's 8×8 patches each image token sees exactly one digit.

Every record asks `<image>\\nadd the digits` and, for digits a b c d, answers with a chain of
running sums mod 10, so every number is one digit (one token of `tiny_vlm.build_tokenizer`):

    see a b c d , a + b = x , x + c = y , y + d = z , so z

(`chain_answer`; `chain_result` is z, `parse_chain` reads an answer back). The answer has
separate steps (reading, each addition, the conclusion), which is what a credit-assignment
study scores. The digits are drawn i.i.d. from `digit_prior` (10 weights, default
`DEFAULT_PRIOR`, skewed towards 0): a blind guesser reads each digit right 22 % of the time by
writing 0, a text-only shortcut on the reading step, while z stays close to uniform (at most
10.07 % for any digit under the default prior), so the conclusion cannot be guessed without
reading.

Train records draw their digit images from the first 70 % of `load_digits` (synthcit's
alignment and train pools), test records from the last 30 % (synthcit's test pool), so no test
image is seen in training; a drawn digit's image is uniform among that pool's images of the
digit. Each (task, split) draws from its own seed `derive_seed(seed, "visarith", name, split)`,
so resizing one task leaves the others unchanged. There is no alignment file. `build_visarith`
writes `visarith.h5` (dataset `images`, uint8 [N, 16, 16], each task's train then test records
in stream order), `<task>/train.jsonl`, `<task>/test.jsonl` (records point at
`h5:../visarith.h5#/images/<i>`; `meta` holds `visual_needed: true`, `kind: chain_sum`, the
`digits`, the `result` z and the `sources`, indices into `load_digits`) and, last,
`stream.yaml`; every file is written atomically and a rebuild gives the same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.arguments import output_folder
from reprolab.core.determinism import derive_seed
from reprolab.core.progress import progress
from reprolab.preprocess.instr.images import H5_PREFIX
from reprolab.preprocess.instr.records import IMAGE_TOKEN
from reprolab.preprocess.instr.synthcit import (
    DATASET,
    METRIC,
    SpecReader,
    digit_pools,
    render,
    write_generated,
)

N_DIGITS = 4
PROMPT = "add the digits"
ANSWER = "see {} {} {} {} , {} + {} = {} , {} + {} = {} , {} + {} = {} , so {}"
KIND = "chain_sum"
DEFAULT_PRIOR = (0.22, 0.16, 0.12, 0.10, 0.08, 0.08, 0.07, 0.06, 0.06, 0.05)
H5_NAME = "visarith.h5"
SPLITS = ("train", "test")
_SLOT = "{}"
_DIGIT_TEXTS = tuple(str(d) for d in range(10))
_READ = SpecReader("visarith")


def _checked(digits: Sequence[int]) -> tuple[int, ...]:
    """`digits` as ints if they are four integers in 0-9, else ValueError."""
    ok = len(digits) == N_DIGITS and all(
        isinstance(d, Integral) and not isinstance(d, bool) and 0 <= d <= 9 for d in digits
    )
    if not ok:
        raise ValueError(f"expected {N_DIGITS} digits in 0-9, got {list(digits)!r}")
    return tuple(int(d) for d in digits)


def _running_sums(digits: Sequence[int]) -> list[int]:
    """The chain's sums: digit 1 + digit 2, then each sum + the next digit, all mod 10."""
    sums = [digits[0]]
    for digit in digits[1:]:
        sums.append((sums[-1] + digit) % 10)
    return sums[1:]


def chain_result(digits: Sequence[int]) -> int:
    """The answer's final digit for four digits in 0-9: their sum mod 10."""
    return _running_sums(_checked(digits))[-1]


def chain_answer(digits: Sequence[int]) -> str:
    """The correct answer for four digits in 0-9, e.g. 4 1 0 0 →
    `see 4 1 0 0 , 4 + 1 = 5 , 5 + 0 = 5 , 5 + 0 = 5 , so 5`; ValueError for other input."""
    digits = _checked(digits)
    sums = _running_sums(digits)
    steps = zip([digits[0], *sums[:-1]], digits[1:], sums, strict=True)
    return ANSWER.format(*digits, *(n for step in steps for n in step), sums[-1])


@dataclass(frozen=True)
class ParsedChain:
    """An answer in the chain format, as written (right or wrong): the four digits read, each
    step as (left operand, right operand, sum), and the final digit after "so"."""

    digits: tuple[int, ...]
    steps: tuple[tuple[int, int, int], ...]
    final: int

    @property
    def sums(self) -> tuple[int, ...]:
        """The intermediate sums written, one per step."""
        return tuple(total for _, _, total in self.steps)


def parse_chain(text: str) -> ParsedChain | None:
    """Read an answer in the chain format of `chain_answer` back, keeping what it says even
    where the arithmetic is wrong; None for any text not in the format (a word missing, added
    or changed, a number that is not one digit 0-9). Words may be separated by any whitespace,
    and whitespace around the text is ignored."""
    words, template = text.split(), ANSWER.split()
    if len(words) != len(template):
        return None
    numbers = []
    for word, expected in zip(words, template, strict=True):
        if expected == _SLOT:
            if word not in _DIGIT_TEXTS:
                return None
            numbers.append(int(word))
        elif word != expected:
            return None
    steps = numbers[N_DIGITS:-1]
    return ParsedChain(
        digits=tuple(numbers[:N_DIGITS]),
        steps=tuple((steps[i], steps[i + 1], steps[i + 2]) for i in range(0, len(steps), 3)),
        final=numbers[-1],
    )


@dataclass(frozen=True)
class TaskSpec:
    """One task of the stream: its name (folder and id prefix) and record counts."""

    name: str
    train: int
    test: int


@dataclass(frozen=True)
class VisArithSpec:
    """What `build_visarith` makes: seed, pixel noise, stroke gain range, tasks, and the
    normalised prior of the digits."""

    seed: int
    noise: float
    stroke_gain: tuple[float, float]
    tasks: tuple[TaskSpec, ...]
    digit_prior: tuple[float, ...] = DEFAULT_PRIOR

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> VisArithSpec:
        """Build from a params mapping; ParamsError naming the key for a missing, unknown or
        bad value (`digit_prior` may be absent or null: `DEFAULT_PRIOR`)."""
        _READ.keys(params, {"seed", "noise", "stroke_gain", "tasks"}, {"digit_prior"}, "")
        stroke_gain = _READ.gain(params["stroke_gain"], "stroke_gain")
        tasks = _READ.tasks(params["tasks"], "tasks", _task)
        prior = params.get("digit_prior")
        return cls(
            seed=_READ.integer(params["seed"], "seed", 0),
            noise=_READ.number(params["noise"], "noise", 0.0, None),
            stroke_gain=stroke_gain,
            tasks=tasks,
            digit_prior=_prior(DEFAULT_PRIOR if prior is None else prior),
        )


def _task(task: Any, where: str) -> TaskSpec:
    _READ.keys(task, {"name", "train", "test"}, set(), f"{where}.")
    return TaskSpec(
        name=_READ.name(task["name"], f"{where}.name"),
        train=_READ.integer(task["train"], f"{where}.train", 1),
        test=_READ.integer(task["test"], f"{where}.test", 1),
    )


def _prior(value: Any) -> tuple[float, ...]:
    """Ten non-negative weights with a positive sum, normalised to sum to 1."""
    if not isinstance(value, list | tuple) or len(value) != 10:
        raise _READ.error(
            "digit_prior", f"{value!r}, expected a list of 10 non-negative weights (digits 0-9)"
        )
    weights = [_READ.number(w, f"digit_prior[{i}]", 0.0, None) for i, w in enumerate(value)]
    total = math.fsum(weights)
    if total <= 0:
        raise _READ.error("digit_prior", "the weights sum to 0, expected a positive sum")
    return tuple(w / total for w in weights)


def vocabulary(spec: VisArithSpec) -> list[str]:
    """Every word the generator writes (prompt and answers), sorted; the same for every spec.
    The `<image>` placeholder is not a word (see `records.IMAGE_TOKEN`)."""
    words = set(PROMPT.split()) | set(ANSWER.split()) | set(_DIGIT_TEXTS)
    return sorted(words - {_SLOT})


def split_pools(count: int) -> dict[str, np.ndarray]:
    """Indices into the `count` digits of `load_digits()` that train and test records draw
    their images from: synthcit's alignment and train pools, and its test pool (disjoint)."""
    pools = digit_pools(count)
    return {"train": np.concatenate([pools["align"], pools["train"]]), "test": pools["test"]}


def _sources(
    rng: np.random.Generator, pool: np.ndarray, targets: np.ndarray, drawn: np.ndarray
) -> np.ndarray:
    """For each digit of `drawn`, an index of an image of that digit, uniform within `pool`."""
    by_digit = pool[np.argsort(targets[pool], kind="stable")]
    counts = np.bincount(targets[pool], minlength=10)
    starts = np.cumsum(counts) - counts
    return by_digit[starts[drawn] + rng.integers(0, counts[drawn])]


def _part(
    spec: VisArithSpec, name: str, split: str, n: int, pool: np.ndarray, digits: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The digits [n, 4] of one (task, split), their source images [n, 4] and the canvases."""
    rng = np.random.default_rng(derive_seed(spec.seed, "visarith", name, split))
    drawn = rng.choice(10, size=(n, N_DIGITS), p=spec.digit_prior)
    sources = _sources(rng, pool, digits.target, drawn)
    gains = rng.uniform(*spec.stroke_gain, size=(n, N_DIGITS))
    quadrants = range(N_DIGITS)
    canvases = np.stack(
        [
            render(
                list(zip(digits.images[row], quadrants, gain.tolist(), strict=True)),
                spec.noise,
                rng,
            )
            for row, gain in zip(sources, gains, strict=True)
        ]
    )
    return drawn, sources, canvases


def _record(
    record_id: str, image: str, task: str, drawn: Sequence[int], sources: Sequence[int]
) -> dict[str, Any]:
    """One record: the question, the chain answer for `drawn` and the labels."""
    digits = [int(d) for d in drawn]
    return {
        "id": record_id,
        "image": image,
        "conversations": [
            {"from": "human", "value": f"{IMAGE_TOKEN}\n{PROMPT}"},
            {"from": "gpt", "value": chain_answer(digits)},
        ],
        "task": task,
        "eval": {"metric": METRIC},
        "meta": {
            "visual_needed": True,
            "kind": KIND,
            "digits": digits,
            "result": chain_result(digits),
            "sources": [int(s) for s in sources],
        },
    }


def build_visarith(spec: VisArithSpec, out_dir: str | Path, show_progress: bool = False) -> Path:
    """Write the stream of `spec` into `out_dir`; return the path of its `stream.yaml`."""
    from sklearn.datasets import load_digits

    out_dir = output_folder("--out", out_dir)
    digits = load_digits()
    pools = split_pools(len(digits.target))
    parts = [(task.name, split, getattr(task, split)) for task in spec.tasks for split in SPLITS]
    files: dict[str, str] = {}
    canvases, offset = [], 0
    for name, split, n in progress(parts, "visarith", show_progress):
        drawn, sources, images = _part(spec, name, split, n, pools[split], digits)
        lines = [
            _record(
                f"{name}-{split}-{i:05d}",
                f"{H5_PREFIX}../{H5_NAME}#/{DATASET}/{offset + i}",
                name,
                row,
                row_sources,
            )
            for i, (row, row_sources) in enumerate(zip(drawn, sources, strict=True))
        ]
        files[f"{name}/{split}.jsonl"] = "".join(json.dumps(line) + "\n" for line in lines)
        canvases.append(images)
        offset += n
    tasks = [task.name for task in spec.tasks]
    return write_generated(out_dir, "visarith", H5_NAME, np.concatenate(canvases), files, tasks)
