"""What the proxies read from a proof's text: its words, its `$...$` expressions parsed by
sympy, and its structure (assumptions, cases, auxiliary objects, calculation lines).

The corpus writes every expression between dollar signs in a plain ASCII-math dialect (`*` for
products, `^` for powers, `sqrt`, `factorial`, `binomial`, at most one relation `=`, `>=`,
`<=`, `<`, `>`). `parse_expression` turns one into a sympy expression (a relation as the pair
of its sides) without evaluating it, so `2 + 2` stays two operands and one operation; an
expression sympy cannot parse counts as one operation and is reported, never fatal. Since sympy's
parser runs Python's `eval`, text outside the dialect (another character, an underscore, a name
longer than `MAX_NAME` letters, more than `MAX_LENGTH` characters: what a generated proof may
hold) is refused before it reaches sympy, and counted as unparsable; an integer longer than
`MAX_DIGITS` digits counts as 10^MAX_DIGITS.

Structure is read from the start of each line, as the corpus's format fixes it: "Suppose " and
"Assume " open an assumption, "Case n:" a case and "Subcase ..." a nested one, "Let " introduces
an auxiliary object and "Claim:" an auxiliary lemma; "Then $", "So $" and "Hence $" start a
calculation line. Depth is the deepest nesting of assumption, case and subcase blocks.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

EXPRESSION = re.compile(r"\$([^$]+)\$")
RELATION = re.compile(r"(<=|>=|=|<|>)")
INTEGER = re.compile(r"\d+")
DIALECT = re.compile(r"[A-Za-z0-9 +\-*/^().,!=<>]*")
NAME = re.compile(r"[A-Za-z]+")
MAX_LENGTH = 200
MAX_NAME = 12
MAX_DIGITS = 300
CALCULATION = re.compile(r"^(Then|So|Hence) \$")
CASE = re.compile(r"^Case \d+[a-z]?:")
SUBCASE = re.compile(r"^Subcase \w+:")
ASSUMPTION = ("Suppose ", "Assume ")
AUXILIARY = ("Let ", "Claim:")
CONCEPTS = (
    "prime",
    "divisor",
    "divisible",
    "divides",
    "multiple",
    "remainder",
    "residue",
    "modulo",
    "congruent",
    "gcd",
    "coprime",
    "factor",
    "factorization",
    "odd",
    "even",
    "parity",
    "integer",
    "rational",
    "irrational",
    "real",
    "square",
    "cube",
    "root",
    "exponent",
    "power",
    "sum",
    "product",
    "sequence",
    "recurrence",
    "induction",
    "hypothesis",
    "base",
    "inequality",
    "maximum",
    "minimum",
    "bound",
    "mean",
    "average",
    "binomial",
    "factorial",
    "permutation",
    "combination",
    "subset",
    "set",
    "element",
    "bijection",
    "injection",
    "function",
    "graph",
    "vertex",
    "vertices",
    "edge",
    "degree",
    "colour",
    "color",
    "pigeonhole",
    "box",
    "boxes",
    "pair",
    "pairs",
    "contradiction",
    "polynomial",
    "coefficient",
    "digit",
    "fraction",
    "triangle",
    "tiling",
    "matching",
    "partition",
    "invariant",
)
"""The lexicon of mathematical concepts whose distinct occurrences the cognitive-simplicity
proxy counts (an invented, documented list: the paper names no lexicon)."""


@dataclass(frozen=True)
class Expression:
    """One `$...$` expression: its text, its sympy operation count (None when it did not
    parse) and the largest absolute integer in it."""

    text: str
    operations: int | None
    largest_integer: int


def words(text: str) -> list[str]:
    """The proof's whitespace-separated tokens (what conciseness counts)."""
    return text.split()


def in_dialect(source: str) -> bool:
    """Whether an expression keeps to the dialect's characters, name lengths and length (what
    may be handed to sympy's parser)."""
    return (
        len(source) <= MAX_LENGTH
        and DIALECT.fullmatch(source) is not None
        and all(len(name) <= MAX_NAME for name in NAME.findall(source))
    )


@lru_cache(maxsize=4096)
def parse_expression(source: str) -> Expression:
    """Parse one expression of the dialect (module docstring) and count its operations:
    sympy's `count_ops` of each side of a relation, plus one for the relation."""
    from sympy.parsing.sympy_parser import parse_expr, standard_transformations

    integers = [int(n) if len(n) <= MAX_DIGITS else 10**MAX_DIGITS for n in INTEGER.findall(source)]
    largest = max(integers, default=0)
    if not in_dialect(source):
        return Expression(source, None, largest)
    from sympy import Expr, count_ops

    sides = RELATION.split(source)
    try:
        with warnings.catch_warnings():  # deprecations about odd generated text, not errors
            warnings.simplefilter("ignore")
            operands = [
                parse_expr(
                    side.replace("^", "**"),
                    transformations=standard_transformations,
                    evaluate=False,
                )
                for side in sides[::2]
            ]
        if not all(isinstance(o, Expr) for o in operands):  # a tuple, a bare function name
            return Expression(source, None, largest)
        operations = sum(int(count_ops(o)) for o in operands)
    except Exception:  # sympy raises many kinds for text it cannot read
        return Expression(source, None, largest)
    return Expression(source, operations + len(sides) // 2, largest)


def expressions(text: str) -> list[Expression]:
    """Every `$...$` expression of a proof, parsed."""
    return [parse_expression(match.strip()) for match in EXPRESSION.findall(text)]


def lines(text: str) -> list[str]:
    """The proof's non-empty lines, stripped."""
    return [line.strip() for line in text.splitlines() if line.strip()]


@dataclass(frozen=True)
class Structure:
    """What the cognitive-simplicity proxy counts in a proof."""

    depth: int
    cases: int
    auxiliary: int
    concepts: int


def structure(text: str) -> Structure:
    """Depth of nested assumption, case and subcase blocks, the number of cases and subcases,
    of auxiliary objects and lemmas, and of distinct lexicon concepts."""
    depth = cases = auxiliary = 0
    assumption = case = subcase = 0
    for line in lines(text):
        if line.startswith(ASSUMPTION):
            assumption = 1
        elif CASE.match(line):
            case, subcase = 1, 0
            cases += 1
        elif SUBCASE.match(line):
            subcase = 1
            cases += 1
        if line.startswith(AUXILIARY):
            auxiliary += 1
        depth = max(depth, assumption + case + subcase)
    found = {w.strip(".,;:()").lower() for w in text.split()}
    return Structure(depth, cases, auxiliary, len(found & set(CONCEPTS)))


def calculation_lines(text: str) -> int:
    """Lines that are one step of calculation ("Then $", "So $", "Hence $")."""
    return sum(bool(CALCULATION.match(line)) for line in lines(text))


def computation_cost(text: str) -> float:
    """The raw cost the computational-ease proxy normalises: the operations of every
    expression (an unparsable one counts 1), the calculation lines and log10(1 + the largest
    integer)."""
    found = expressions(text)
    operations = sum(1 if e.operations is None else e.operations for e in found)
    largest = max((e.largest_integer for e in found), default=0)
    return operations + calculation_lines(text) + math.log10(1 + largest)


def cognitive_cost(text: str, weights: Sequence[float] = (1.0, 1.0, 1.0, 1.0)) -> float:
    """The raw cost the cognitive-simplicity proxy normalises: a·depth + b·cases +
    c·auxiliary objects + d·distinct concepts."""
    found = structure(text)
    a, b, c, d = weights
    return a * found.depth + b * found.cases + c * found.auxiliary + d * found.concepts


def unparsed(text: str) -> list[str]:
    """The expressions of a proof that sympy could not parse (reported by the scorers)."""
    return [e.text for e in expressions(text) if e.operations is None]
