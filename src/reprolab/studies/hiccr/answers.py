"""The verifiable reward of hiccr's paper-scale path: is a free-form response's final answer right?

A response states its final answer inside `\\boxed{...}` (the instruction both ViRL39K and the
MathVista prompts of RL-with-verifiable-rewards work use); the reward is 1 when that answer
matches the item's reference under the item's answer type, else 0. A response with nothing
boxed earns nothing: the reward does not guess an answer out of free text.

Choices: the comparison is rule-based and deterministic (no symbolic algebra, no model judge),
so the same response always earns the same reward. Integers must match exactly; floats match
after rounding both sides to the item's precision (half-up on the written decimal), or within a
relative tolerance of 1e-4 when the item gives no precision; text matches after `normalize`;
lists match element by element. Multiple-choice items accept the right choice's letter or its
text. This module sits below `benchmarks` (which uses `boxed` to unwrap ViRL39K's references);
it names `BenchmarkItem` for type checking only, so the two do not import each other at run time.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reprolab.studies.hiccr.benchmarks import BenchmarkItem

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_TEXT = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox)\s*\{([^{}]*)\}")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DEGREE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°")
_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?"
_PLAIN = re.compile(rf"^{_NUMBER}$")
_INTEGER = re.compile(r"^[+-]?\d+$")
_SLASH = re.compile(rf"^([+-]?)\s*({_NUMBER})\s*/\s*({_NUMBER})$")
_FRAC = re.compile(rf"^([+-]?)\s*\\[dt]?frac\s*\{{\s*({_NUMBER})\s*\}}\s*\{{\s*({_NUMBER})\s*\}}$")
_LETTER = re.compile(r"^\(?([a-z])\)?[.:]?$")


def boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` or `\\fbox{...}` in text, braces balanced.

    Nested braces belong to the content (`\\boxed{\\frac{1}{2}}` gives `\\frac{1}{2}`), and
    escaped braces (`\\{`, `\\}`) are not counted. Only the last box is read: when its braces
    never close, the answer is None rather than an earlier box's content, since the response's
    final statement is the one that counts.
    """
    starts = list(_BOX.finditer(text))
    if not starts:
        return None
    begin = starts[-1].end()
    depth = 1
    i = begin
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[begin:i]
        i += 1
    return None


def normalize(answer: str) -> str:
    """A canonical spelling of an answer, for text comparisons.

    In order: surrounding whitespace is stripped; surrounding `$` (inline or display math) are
    removed; `\\text{...}` (also `\\textbf`, `\\textrm`, `\\mathrm`, `\\mbox`) is replaced by its
    content; a degree mark (`^\\circ`, `^{\\circ}`, `°`) is dropped; `\\%` and `%` are dropped;
    commas between digit groups of three (`1,000`) are removed; a trailing period is removed;
    runs of whitespace become one space; and everything is lower-cased.
    """
    text = answer.strip()
    while len(text) >= 2 and text.startswith("$") and text.endswith("$"):
        text = text[1:-1].strip()
    previous = None
    while previous != text:
        previous = text
        text = _TEXT.sub(r"\1", text)
    text = _DEGREE.sub("", text)
    text = text.replace("\\%", "").replace("%", "")
    text = _THOUSANDS.sub("", text)
    text = text.strip().rstrip(".").strip()
    return " ".join(text.split()).lower()


def as_number(text: str) -> float | None:
    """The value of a written number, or None when text is not one.

    Read after `normalize`: integers, decimals (with an optional exponent), simple fractions
    `a/b`, and `\\frac{a}{b}` / `\\dfrac{a}{b}` / `\\tfrac{a}{b}`, each with an optional sign.
    A zero denominator is not a number.
    """
    value = normalize(text)
    if _PLAIN.match(value):
        return float(value)
    match = _SLASH.match(value) or _FRAC.match(value)
    if match is None:
        return None
    sign, numerator, denominator = match.groups()
    if float(denominator) == 0.0:
        return None
    quotient = float(numerator) / float(denominator)
    return -quotient if sign == "-" else quotient


def _rounded(value: float, places: int) -> Decimal:
    # Half-up on the shortest decimal that spells the float, so 1.455 rounds to 1.46 as written.
    return Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _floats_equal(predicted: float, reference: float, precision: int | None) -> bool:
    if not (math.isfinite(predicted) and math.isfinite(reference)):
        return False
    if precision is None:
        return math.isclose(predicted, reference, rel_tol=1e-4, abs_tol=1e-12)
    try:
        return _rounded(predicted, precision) == _rounded(reference, precision)
    except InvalidOperation:
        return False


def _integers_equal(predicted: str, reference: str) -> bool:
    ours, theirs = as_number(predicted), as_number(reference)
    if ours is None or theirs is None or not (math.isfinite(ours) and math.isfinite(theirs)):
        return False
    return ours.is_integer() and theirs.is_integer() and int(ours) == int(theirs)


def _elements(text: str) -> list[str]:
    body = text.strip()
    while len(body) >= 2 and body[0] + body[-1] in ("[]", "()", "{}"):
        body = body[1:-1].strip()
    return [part.strip() for part in body.split(",")]


def _lists_equal(predicted: str, reference: str, precision: int | None) -> bool:
    ours, theirs = _elements(predicted), _elements(reference)
    if len(ours) != len(theirs):
        return False
    for mine, right in zip(ours, theirs, strict=True):
        a, b = as_number(mine), as_number(right)
        if a is not None and b is not None:
            if not _floats_equal(a, b, precision):
                return False
        elif normalize(mine) != normalize(right):
            return False
    return True


def _choice_index(answer: str, choices: tuple[str, ...]) -> int | None:
    """Which choice an answer names: its text (after normalize), else its letter, else its value.

    Text comes first so that a choice whose text is itself a letter keeps its meaning; a value
    (`2.0` for the choice `2`) counts only when it equals exactly one choice's value.
    """
    spelled = normalize(answer)
    texts = [normalize(choice) for choice in choices]
    if spelled in texts:
        return texts.index(spelled)
    letter = _LETTER.match(spelled)
    if letter is not None:
        index = ord(letter.group(1)) - ord("a")
        return index if index < len(choices) else None
    value = as_number(answer)
    if value is None:
        return None
    same = [i for i, choice in enumerate(choices) if as_number(choice) == value]
    return same[0] if len(same) == 1 else None


def is_correct(response: str, item: BenchmarkItem) -> bool:
    """The verifiable reward: does the response's last boxed answer match the item's reference?

    Nothing boxed (or an empty box) is wrong. A multiple-choice item (non-empty choices) is
    answered by the right choice's letter (A, B, ... by position; also `(A)`, `A.`) or its text;
    the reference is the choice text (MathVista) or a letter. Otherwise the item's answer type
    decides: integer (exact, after `as_number`), float (rounded to precision, else relative
    tolerance 1e-4), list (element-wise, brackets stripped, split on commas) or text (after
    `normalize`).
    """
    predicted = boxed(response)
    if predicted is None or not predicted.strip():
        return False
    if item.choices:
        right = _choice_index(item.answer, item.choices)
        if right is None:
            return normalize(predicted) == normalize(item.answer)
        return _choice_index(predicted, item.choices) == right
    if item.answer_type == "integer":
        return _integers_equal(predicted, item.answer)
    if item.answer_type == "float":
        ours, theirs = as_number(predicted), as_number(item.answer)
        if ours is None or theirs is None:
            return False
        return _floats_equal(ours, theirs, item.precision)
    if item.answer_type == "list":
        return _lists_equal(predicted, item.answer, item.precision)
    return normalize(predicted) == normalize(item.answer)
