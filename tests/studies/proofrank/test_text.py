"""What the proxies read from a proof: expressions in the dialect, structure markers, costs."""

from __future__ import annotations

import math

import pytest

from reprolab.studies.proofrank.text import (
    calculation_lines,
    cognitive_cost,
    computation_cost,
    expressions,
    parse_expression,
    structure,
    unparsed,
)


@pytest.mark.parametrize(
    ("source", "operations", "largest"),
    [
        ("n*(n+1)/2", 3, 2),  # a product, a sum, a division
        ("a^2 + b^2 >= 2*a*b", 6, 2),  # two powers, a sum, two products and the relation
        ("2^10 = 1024", 2, 1024),  # not evaluated: one power and the relation
        ("binomial(n, k)", 1, 0),
        ("x", 0, 0),
    ],
)
def test_expressions_of_the_dialect_count_their_operations_unevaluated(source, operations, largest):
    found = parse_expression(source)
    assert (found.operations, found.largest_integer) == (operations, largest)


def test_an_unparsable_expression_counts_one_operation_and_is_reported():
    text = "We have $n = 2*k$ and $so what$.\nThen $k + k = n$."
    assert unparsed(text) == ["so what"]
    costs = [1 if e.operations is None else e.operations for e in expressions(text)]
    assert costs == [2, 1, 2]
    assert computation_cost(text) == pytest.approx(sum(costs) + 1 + math.log10(3))


def test_structure_counts_nesting_cases_auxiliary_objects_and_concepts():
    text = (
        "Suppose the claim fails for some integer n.\n"
        "Case 1: n is even.\n"
        "Subcase 1a: n is a multiple of four.\n"
        "Case 2: n is odd.\n"
        "Let m be the remainder of n.\n"
        "Claim: m is a prime.\n"
        "So $m = 1$."
    )
    found = structure(text)
    assert (found.depth, found.cases, found.auxiliary) == (3, 3, 2)
    assert found.concepts == 6  # integer, even, multiple, odd, remainder, prime
    assert calculation_lines(text) == 1
    assert cognitive_cost(text) == 3 + 3 + 2 + 6


def test_a_plain_direct_proof_has_no_structure_cost():
    text = "Then $(a - b)^2 >= 0$.\nHence $a^2 + b^2 >= 2*a*b$."
    assert cognitive_cost(text) == 0 and calculation_lines(text) == 2


@pytest.mark.parametrize(
    "source",
    [
        "__import__('os')",
        "x_1 + 2",
        "a; b",
        "averyveryverylongname + 1",
        "1 + " * 80 + "1",
        "(sqrt, 2)",
        "sqrt",
    ],
)
def test_text_outside_the_dialect_never_reaches_sympy(source):
    assert parse_expression(source).operations is None


def test_an_integer_too_long_for_python_is_capped():
    assert parse_expression("1" * 5000).largest_integer == 10**300
