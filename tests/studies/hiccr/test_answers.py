"""The verifiable reward: boxed-answer extraction, normalisation, numbers, and is_correct."""

from __future__ import annotations

import pytest

from reprolab.studies.hiccr.answers import as_number, boxed, is_correct, normalize
from reprolab.studies.hiccr.benchmarks import BenchmarkItem


def item(answer: str, answer_type: str = "text", choices=(), precision=None) -> BenchmarkItem:
    return BenchmarkItem("1", "q", b"", answer, tuple(choices), answer_type, precision)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{42}.", "42"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("first \\boxed{1} then \\boxed{ 2 }", " 2 "),
        ("\\fbox{B} at the end", "B"),
        ("\\boxed {x^{2}+1}", "x^{2}+1"),
        ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
        ("\\boxed{}", ""),
        ("no box here", None),
        ("\\boxed{\\frac{1}{2}", None),
        ("\\boxed{3} but then \\boxed{4", None),
        ("boxed{3}", None),
    ],
)
def test_boxed(text: str, expected: str | None) -> None:
    assert boxed(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Yes. ", "yes"),
        ("$5$", "5"),
        ("$$\\text{Blue}$$", "blue"),
        ("\\text{red} car", "red car"),
        ("50\\%", "50"),
        ("12%", "12"),
        ("1,000,000", "1000000"),
        ("1, 2", "1, 2"),
        ("17^\\circ", "17"),
        ("Two   words", "two words"),
    ],
)
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7", 7.0),
        ("-0.25", -0.25),
        (".5", 0.5),
        ("3/4", 0.75),
        ("\\frac{1}{8}", 0.125),
        ("-\\dfrac{3}{2}", -1.5),
        ("$1,200$", 1200.0),
        ("1e-3", 0.001),
        ("1/0", None),
        ("x+1", None),
        ("", None),
        ("\\frac{a}{2}", None),
    ],
)
def test_as_number(text: str, expected: float | None) -> None:
    assert as_number(text) == expected


def test_nothing_boxed_earns_nothing() -> None:
    assert not is_correct("The answer is 4.", item("4", "integer"))
    assert not is_correct("\\boxed{ }", item("", "text"))
    assert is_correct("The answer is \\boxed{4}.", item("4", "integer"))


def test_integer_answers_match_exactly() -> None:
    ref = item("1000", "integer")
    assert is_correct("\\boxed{1,000}", ref)
    assert is_correct("\\boxed{1000.0}", ref)
    assert not is_correct("\\boxed{1001}", ref)
    assert not is_correct("\\boxed{1000.5}", ref)
    assert not is_correct("\\boxed{one thousand}", ref)
    assert is_correct("\\boxed{\\frac{6}{2}}", item("3", "integer"))


def test_float_answers_round_to_precision() -> None:
    ref = item("1.46", "float", precision=2)
    assert is_correct("\\boxed{1.455}", ref)  # half-up on the written decimal
    assert is_correct("\\boxed{1.4649}", ref)
    assert not is_correct("\\boxed{1.454}", ref)
    assert not is_correct("\\boxed{1.47}", ref)
    assert is_correct("\\boxed{3}", item("2.5", "float", precision=0))
    assert not is_correct("\\boxed{2}", item("2.5", "float", precision=1))


def test_float_answers_without_precision_use_relative_tolerance() -> None:
    ref = item("\\frac{1}{3}", "float")
    assert is_correct("\\boxed{0.33333}", ref)
    assert is_correct("\\boxed{1/3}", ref)
    assert not is_correct("\\boxed{0.33}", ref)
    assert not is_correct("\\boxed{x}", ref)


def test_text_answers_compare_after_normalize() -> None:
    ref = item("Triangle")
    assert is_correct("\\boxed{\\text{triangle}.}", ref)
    assert not is_correct("\\boxed{square}", ref)


def test_list_answers_compare_element_wise() -> None:
    ref = item("[2, 4.5, cat]", "list")
    assert is_correct("\\boxed{2,4.5, Cat}", ref)
    assert is_correct("\\boxed{(2.0, 4.5, cat)}", ref)
    assert not is_correct("\\boxed{4.5, 2, cat}", ref)
    assert not is_correct("\\boxed{2, 4.5}", ref)


def test_multiple_choice_accepts_the_letter_or_the_choice_text() -> None:
    ref = item("45°", choices=["30°", "45°", "60°"])
    for right in ("B", "(B)", "b", "B.", "45°", "45^\\circ", "\\text{45°}"):
        assert is_correct(f"\\boxed{{{right}}}", ref), right
    for wrong in ("A", "(C)", "D", "60°", "50"):
        assert not is_correct(f"\\boxed{{{wrong}}}", ref), wrong


def test_multiple_choice_with_word_choices() -> None:
    ref = item("Blue", choices=["red", "blue", "green"])
    assert is_correct("\\boxed{\\text{BLUE}}", ref)
    assert is_correct("\\boxed{(B)}", ref)
    assert not is_correct("\\boxed{green}", ref)
    assert not is_correct("\\boxed{purple}", ref)


def test_multiple_choice_with_a_letter_reference_and_numeric_choices() -> None:
    ref = item("C", choices=["1", "2", "3.5"])
    assert is_correct("\\boxed{C}", ref)
    assert is_correct("\\boxed{3.5}", ref)
    assert is_correct("\\boxed{3.50}", ref)  # the value of exactly one choice
    assert not is_correct("\\boxed{A}", ref)
    assert not is_correct("\\boxed{2}", ref)


def test_a_choice_whose_text_is_a_letter_keeps_its_text_meaning() -> None:
    ref = item("A", choices=["B", "A"])
    assert is_correct("\\boxed{A}", ref)
    assert not is_correct("\\boxed{B}", ref)
