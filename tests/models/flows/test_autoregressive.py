"""MADE and the MAF layers: MADE's outputs depend only on earlier dimensions in its order (its
Jacobian is strictly triangular in that order) and the context reaches every output; the affine
and spline layers, with and without a context, start as the identity, invert exactly, have
autograd's log-determinant, and take one MADE pass forward and ``features`` passes inverse."""

from __future__ import annotations

import pytest
import torch
from torch.autograd.functional import jacobian

from reprolab.models.flows.autoregressive import (
    MADE,
    AffineAutoregressive,
    Autoregressive,
    SplineAutoregressive,
    input_degrees,
)
from reprolab.models.flows.base import Inverse
from tests.models.flows.checks import assert_round_trip, autograd_log_det, randomize

pytestmark = pytest.mark.usefixtures("torch_one_thread")

FEATURES, CONTEXT = 5, 2
ORDER = [3, 0, 4, 1, 2]


def build(kind: str, context_dim: int) -> Autoregressive:
    """A small MAF layer of `kind` in ORDER (seeded); the spline's bound leaves tails in use."""
    torch.manual_seed(0)
    if kind == "affine":
        return AffineAutoregressive(FEATURES, (16, 16), context_dim, ORDER)
    return SplineAutoregressive(FEATURES, (16, 16), context_dim, ORDER, bins=5, bound=2.0)


def inputs(n: int, context_dim: int, dtype: torch.dtype = torch.float64, seed: int = 1):
    """Inputs (n, FEATURES) spread over ±4 and a context (n, context_dim), or None."""
    generator = torch.Generator().manual_seed(seed)
    x = 2 * torch.randn(n, FEATURES, generator=generator, dtype=dtype)
    if not context_dim:
        return x, None
    return x, torch.randn(n, context_dim, generator=generator, dtype=dtype)


CASES = [(kind, c) for kind in ("affine", "spline") for c in (0, CONTEXT)]


@pytest.mark.parametrize("context_dim", [0, CONTEXT])
def test_made_is_strictly_triangular_in_its_order(context_dim):
    made = randomize(MADE(FEATURES, 3, (16, 16), context_dim, ORDER).double(), seed=2)
    x, context = inputs(3, context_dim)
    degrees = input_degrees(FEATURES, ORDER)
    allowed = degrees[None, :] < degrees[:, None]  # output i may see input j
    assert int(allowed.sum()) == FEATURES * (FEATURES - 1) // 2
    for b in range(3):
        row = None if context is None else context[b : b + 1]
        matrix = jacobian(lambda v, row=row: made(v[None], row)[0], x[b])  # (out, params, in)
        assert torch.all(matrix.permute(0, 2, 1)[~allowed] == 0)
        assert torch.all(matrix.abs().amax(1)[allowed] > 1e-6)


def test_the_context_reaches_every_output_even_the_first_in_the_order():
    made = randomize(MADE(FEATURES, 2, (16,), CONTEXT, ORDER).double(), seed=3)
    x, context = inputs(1, CONTEXT)
    matrix = jacobian(lambda c: made(x, c[None])[0], context[0])  # (out, params, context)
    assert torch.all(matrix.abs().amax((1, 2)) > 1e-6)
    assert torch.all(matrix[ORDER[0]] != 0)


def test_one_feature_depends_on_the_context_alone():
    made = randomize(MADE(1, 2, (4,), CONTEXT).double(), seed=4)
    _, context = inputs(2, CONTEXT)
    x = torch.tensor([[-3.0], [7.0]], dtype=torch.float64)
    out = made(x, context)
    assert torch.equal(made(-x, context), out)
    assert not torch.allclose(out, made(x, context + 1))


def test_a_bad_order_is_refused():
    with pytest.raises(ValueError, match="permutation of range\\(3\\)"):
        input_degrees(3, [0, 0, 2])


@pytest.mark.parametrize(("kind", "context_dim"), CASES)
def test_a_fresh_layer_is_the_identity(kind, context_dim):
    x, context = inputs(6, context_dim, torch.float32)
    layer = build(kind, context_dim)
    for y, log_det in (layer(x, context), layer.inverse(x, context)):
        torch.testing.assert_close(y, x, atol=1e-6, rtol=0)
        torch.testing.assert_close(log_det, torch.zeros(6), atol=1e-6, rtol=0)


@pytest.mark.parametrize(("kind", "context_dim"), CASES)
@pytest.mark.parametrize(
    ("dtype", "scale", "atol"), [(torch.float64, 0.5, 1e-8), (torch.float32, 0.2, 1e-4)]
)
def test_the_sequential_inverse_undoes_the_layer(kind, context_dim, dtype, scale, atol):
    """float32 with moderate parameters, as for the couplings."""
    layer = randomize(build(kind, context_dim).to(dtype), seed=5, scale=scale)
    x, context = inputs(64, context_dim, dtype)
    assert_round_trip(layer, x, context, atol)


@pytest.mark.parametrize(("kind", "context_dim"), CASES)
def test_the_log_determinant_is_that_of_the_jacobian(kind, context_dim):
    layer = randomize(build(kind, context_dim).double(), seed=6)
    x, context = inputs(4, context_dim)
    _, log_det = layer(x, context)
    torch.testing.assert_close(log_det, autograd_log_det(layer, x, context), atol=1e-9, rtol=0)
    _, inverse_log_det = layer.inverse(x, context)
    inverse = Inverse(layer)
    torch.testing.assert_close(
        inverse_log_det, autograd_log_det(inverse, x, context), atol=1e-9, rtol=0
    )
    assert (log_det.abs() > 1e-3).all() and (inverse_log_det.abs() > 1e-3).all()


@pytest.mark.parametrize("kind", ["affine", "spline"])
def test_forward_is_one_made_pass_and_the_inverse_one_per_feature(kind):
    layer = randomize(build(kind, CONTEXT), seed=7)
    calls = []
    layer.made.register_forward_hook(lambda *_: calls.append(1))
    x, context = inputs(3, CONTEXT, torch.float32)
    layer(x, context)
    assert len(calls) == 1
    layer.inverse(x, context)
    assert len(calls) == 1 + FEATURES
    Inverse(layer).inverse(x, context)  # an IAF samples in one pass
    assert len(calls) == 2 + FEATURES
