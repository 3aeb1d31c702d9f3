"""Sharpness: power iteration on Hessian-vector products against known and dense Hessians, the
model left as it was found, and repeatability."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call
from torch.nn.attention import SDPBackend, sdpa_kernel

from reprolab.core.determinism import seed_everything
from reprolab.studies.ngpt_fp4.models import CharLM, LMConfig
from reprolab.studies.ngpt_fp4.nvfp4 import FP32, NVFP4Linear, recipe_named
from reprolab.studies.ngpt_fp4.sharpness import (
    hessian_vector_product,
    power_iteration,
    start_vector,
    top_hessian_eigenvalue,
)
from reprolab.studies.ngpt_fp4.training import loss_of, windows

pytestmark = pytest.mark.usefixtures("torch_one_thread")
STREAM = torch.randint(0, 7, (300,), generator=torch.Generator().manual_seed(5))


def tiny_lm(normalized: bool, hidden: int, seed: int = 0) -> CharLM:
    seed_everything(seed, 1)
    return CharLM(
        LMConfig(vocab=7, hidden=hidden, layers=1, heads=2, context=16, normalized=normalized)
    )


def batches(count: int, length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    return [windows(STREAM, 2, length, generator) for _ in range(count)]


def largest_magnitude(eigenvalues: torch.Tensor) -> float:
    return float(eigenvalues[eigenvalues.abs().argmax()])


@pytest.mark.parametrize(
    "spectrum", [[5.0, -3.0, 2.0, 1.0, 0.5, 0.0], [-6.0, 4.0, 1.0, -1.0, 0.2, 3.0]]
)
def test_power_iteration_finds_the_top_eigenvalue_of_a_quadratic(spectrum: list[float]):
    generator = torch.Generator().manual_seed(0)
    basis, _ = torch.linalg.qr(torch.randn(6, 6, generator=generator, dtype=torch.float64))
    matrix = basis @ torch.diag(torch.tensor(spectrum, dtype=torch.float64)) @ basis.T
    matrix = (matrix + matrix.T) / 2
    x = torch.randn(6, generator=generator, dtype=torch.float64, requires_grad=True)

    def loss() -> torch.Tensor:
        return 0.5 * x @ matrix @ x

    def hessian_times(vector: list[torch.Tensor]) -> list[torch.Tensor]:
        return hessian_vector_product(loss, [x], vector)

    probe = torch.randn(6, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(hessian_times([probe])[0], matrix @ probe)
    result = power_iteration(hessian_times, start_vector([x], seed=3), iterations=200)
    expected = largest_magnitude(torch.linalg.eigvalsh(matrix))
    assert result.eigenvalue == pytest.approx(expected, rel=1e-6)
    assert result.eigenvalue == pytest.approx(spectrum[0], rel=1e-6)  # the sign is kept
    assert len(result.estimates) == 200 and result.estimates[-1] == result.eigenvalue
    assert result.relative_change < 1e-9


def test_a_linear_loss_has_zero_sharpness_and_few_iterations_are_refused():
    x = torch.ones(3, requires_grad=True)
    result = power_iteration(
        lambda v: hessian_vector_product(lambda: x.sum(), [x], v), [torch.ones(3)], 3
    )
    assert result.eigenvalue == 0.0 and result.estimates == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="at least 2"):
        power_iteration(lambda v: v, [torch.ones(3)], 1)


def dense_hessian(model: CharLM, data: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """The Hessian of the mean loss over all flattened parameters, by torch's own routine."""
    names = [name for name, _ in model.named_parameters()]
    values = [p.detach() for p in model.parameters()]
    sizes = [value.numel() for value in values]
    flat = torch.cat([value.reshape(-1) for value in values])

    def mean_loss(point: torch.Tensor) -> torch.Tensor:
        pieces = point.split(sizes)
        parameters = {n: p.view_as(v) for n, p, v in zip(names, pieces, values, strict=True)}
        losses = [
            torch.nn.functional.cross_entropy(
                functional_call(model, parameters, (inputs,)).reshape(-1, 7), targets.reshape(-1)
            )
            for inputs, targets in data
        ]
        return sum(losses) / len(losses)

    with sdpa_kernel(SDPBackend.MATH):
        return torch.autograd.functional.hessian(mean_loss, flat, vectorize=True)


@pytest.mark.parametrize("normalized", [False, True])
def test_the_estimate_is_the_top_eigenvalue_of_the_dense_hessian(normalized: bool):
    model = tiny_lm(normalized, hidden=8).double().eval()
    data = batches(2, 8)
    hessian = dense_hessian(model, data)
    assert hessian.shape[0] == sum(p.numel() for p in model.parameters()) < 2000
    expected = largest_magnitude(torch.linalg.eigvalsh((hessian + hessian.T) / 2))
    result = top_hessian_eigenvalue(model, data, iterations=40, seed=0)
    assert result.eigenvalue == pytest.approx(expected, rel=1e-3)
    assert result.relative_change < 1e-6
    assert abs(result.estimates[0]) < 0.5 * abs(expected)  # it did iterate from a random start


@pytest.mark.parametrize("recipe", ["nvfp4", "nvfp4_static"])
@pytest.mark.parametrize("training", [True, False])
def test_the_model_is_measured_in_fp32_and_left_as_it_was(recipe: str, training: bool):
    model = tiny_lm(True, hidden=16)
    model.set_recipe(recipe_named(recipe, 16.0))
    model.train(training)
    data = batches(2, 16)
    loss_of(model, *data[0]).backward()  # freezes a static recipe's scales, fills the grads
    layers = [m for m in model.modules() if isinstance(m, NVFP4Linear)]
    recipes = [layer.recipe for layer in layers]
    frozen = [layer.frozen_scales for layer in layers]
    scales = [list(scale.scales) for scale in frozen]
    if recipe == "nvfp4_static":
        assert all(None not in row for row in scales)
    parameters = {name: p.detach().clone() for name, p in model.named_parameters()}
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    with torch.no_grad():
        logits = model(data[1][0])

    result = top_hessian_eigenvalue(model, data, iterations=5, seed=0)

    assert [layer.recipe for layer in layers] == recipes
    assert all(layer.frozen_scales is f for layer, f in zip(layers, frozen, strict=True))
    assert [list(scale.scales) for scale in frozen] == scales
    assert model.training is training
    for name, p in model.named_parameters():
        assert torch.equal(p, parameters[name]) and torch.equal(p.grad, grads[name]), name
    with torch.no_grad():
        assert torch.equal(model(data[1][0]), logits)
    reference = tiny_lm(True, hidden=16)
    reference.set_recipe(FP32)
    assert top_hessian_eigenvalue(reference, data, iterations=5, seed=0) == result


def test_one_seed_gives_one_result_and_another_seed_another_start():
    model = tiny_lm(False, hidden=8)
    data = batches(2, 8)
    first = top_hessian_eigenvalue(model, data, iterations=6, seed=4)
    assert top_hessian_eigenvalue(model, data, iterations=6, seed=4) == first
    other = top_hessian_eigenvalue(model, data, iterations=6, seed=5)
    assert other.estimates[0] != first.estimates[0]
    assert all(p.grad is None for p in model.parameters())
    with pytest.raises(ValueError, match="at least one batch"):
        top_hessian_eigenvalue(model, [], iterations=6, seed=4)
