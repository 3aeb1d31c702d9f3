"""bidrive's planners: the teacher's sequential sampling inverts its one-pass density (latents
recovered, log-probabilities consistent), both flows' log-determinants match autograd's
Jacobian (plan scaling included, so NLLs are of plans in metres), seeded sampling is
reproducible, the teacher samples in blocks × 16 MADE passes and the student in one pass, the
selection rules and the constant-velocity plan on hand-made inputs, and a few training steps of
every learned planner lower its loss on a tiny synthetic set."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from reprolab.models.flows.autoregressive import MADE
from reprolab.models.flows.base import jacobian_log_det
from reprolab.models.flows.nets import MLP
from reprolab.studies.bidrive.planners import (
    PLAN_DIM,
    ARTeacher,
    CouplingStudent,
    FlowMatchingPlanner,
    FlowPlanner,
    RegressionPlanner,
    constant_velocity_plan,
    flatten_plans,
    select_closest_to_mean,
    select_max_likelihood,
    student_mask,
)
from tests.models.flows.checks import randomize
from tests.studies.bidrive.conftest import SMALL

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def build(kind: str, data, seed: int = 0, scale: float = 0.1) -> FlowPlanner:
    """A small teacher or student fitted to the data's statistics, with random parameters (so no
    layer is the identity)."""
    torch.manual_seed(seed)
    if kind.startswith("teacher"):
        element = "spline" if kind == "teacher_spline" else "affine"
        model = ARTeacher(blocks=3, element=element, **SMALL)
    else:
        element = "spline" if kind == "student_spline" else "affine"
        model = CouplingStudent(6, element=element, **SMALL)
    model.fit_standardisation(*data)
    return randomize(model, seed + 1, scale)


@pytest.mark.parametrize("kind", ["teacher", "teacher_spline", "student", "student_spline"])
def test_sampling_inverts_the_density_pass(kind, data):
    ctx, _ = data
    model = build(kind, data)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        plans, log_prob, z = model.sample(ctx[:5], 4, generator, temperature=0.8)
        assert plans.shape == (5, 4, 8, 2) and log_prob.shape == (5, 4) and z.shape == (5, 4, 16)
        recovered, log_det = model.encode(plans, ctx[:5])
        torch.testing.assert_close(recovered, z, atol=1e-4, rtol=0)
        torch.testing.assert_close(model.log_prob(plans, ctx[:5]), log_prob, atol=1e-4, rtol=0)
        # the model's own (untempered) density at the sample: log N(z; 0, I), not N(0, 0.8²I)
        base = -0.5 * (z.square().sum(-1) + PLAN_DIM * math.log(2 * math.pi))
        torch.testing.assert_close(log_prob, base + log_det, atol=1e-4, rtol=0)


@pytest.mark.parametrize("kind", ["teacher", "teacher_spline", "student", "student_spline"])
def test_log_det_matches_the_autograd_jacobian_in_16d(kind, data):
    ctx, expert = (t.double() for t in data)
    model = build(kind, data).double()
    transform = model.transform()
    with torch.no_grad():
        context = model.encoder(ctx[:4])
        x = flatten_plans(expert[:4])
        z, log_det = transform(x, context)
        assert z.shape == (4, PLAN_DIM) and not torch.allclose(z, model.scaling(x)[0])
        reference = jacobian_log_det(transform, x, context)
        torch.testing.assert_close(log_det, reference, atol=1e-8, rtol=0)
        # the same determinant reaches log_prob, and decode's log-probability agrees
        base = -0.5 * (z.square().sum(-1) + PLAN_DIM * math.log(2 * math.pi))
        torch.testing.assert_close(model.log_prob(expert[:4], ctx[:4]), base + reference)
        _, log_q = model.decode(z, ctx[:4])
        torch.testing.assert_close(log_q, base + reference)


@pytest.mark.parametrize("kind", ["teacher", "student"])
def test_nll_is_of_plans_in_metres(kind, data):
    """Doubling the scaling's mean and std and the plans leaves the standardised plan as it was,
    so the density of the doubled plans is lower by 16·log 2 (the scaling's log-det)."""
    ctx, expert = data
    model = build(kind, data)
    doubled = copy.deepcopy(model)
    with torch.no_grad():
        doubled.scaling.mean.mul_(2.0)
        doubled.scaling.std.mul_(2.0)
        before = model.log_prob(expert, ctx)
        after = doubled.log_prob(2.0 * expert, ctx)
    torch.testing.assert_close(after, before - PLAN_DIM * math.log(2.0), atol=1e-4, rtol=0)
    std = model.scaling.std
    assert float(std[0]) == pytest.approx(float(expert[:, 0, 0].std(unbiased=False)), rel=1e-5)


def test_seeded_sampling_is_reproducible(data):
    ctx, _ = data
    teacher, student = build("teacher", data), build("student", data)
    torch.manual_seed(0)
    fm = FlowMatchingPlanner(hidden=(32, 32), encoder_hidden=(32,)).fit_standardisation(*data)

    def draws(seed: int) -> list[torch.Tensor]:
        return [
            teacher.sample(ctx[:3], 2, torch.Generator().manual_seed(seed)).plans,
            student.sample(ctx[:3], 2, torch.Generator().manual_seed(seed)).plans,
            fm.sample(ctx[:3], 2, torch.Generator().manual_seed(seed), steps=4),
        ]

    torch.manual_seed(123)  # the global generator plays no part
    for first, again, other in zip(draws(5), draws(5), draws(6), strict=True):
        torch.testing.assert_close(first, again, atol=0, rtol=0)
        assert not torch.allclose(first, other)
    cold = student.sample(ctx[:3], 2, torch.Generator().manual_seed(5), temperature=0.5)
    warm = student.sample(ctx[:3], 2, torch.Generator().manual_seed(5))
    torch.testing.assert_close(cold.latents, 0.5 * warm.latents)


def test_teacher_samples_sequentially_and_the_student_in_one_pass(data):
    """Counting network passes: the teacher's density and the student's sampling and density
    each take one pass per layer; the teacher's sampling 16 per MAF block."""
    ctx, expert = data
    teacher, student = build("teacher", data), build("student", data)
    calls = {"made": 0, "coupling": 0}
    for model, kind, key in ((teacher, MADE, "made"), (student, MLP, "coupling")):
        for module in model.modules():
            if isinstance(module, kind):
                module.register_forward_hook(
                    lambda *_, key=key: calls.__setitem__(key, calls[key] + 1)
                )
    generator = torch.Generator().manual_seed(0)
    teacher.sample(ctx[:2], 3, generator)
    assert calls["made"] == 3 * PLAN_DIM
    teacher.log_prob(expert[:2], ctx[:2])
    assert calls["made"] == 3 * PLAN_DIM + 3
    student.sample(ctx[:2], 3, generator)
    student.log_prob(expert[:2], ctx[:2])
    assert calls["coupling"] == 2 * 6


def test_student_masks_split_x_y_and_early_late():
    x_kept, y_kept, early, late = (student_mask(i) for i in range(4))
    assert x_kept.tolist() == [True, False] * 8 and torch.equal(y_kept, ~x_kept)
    assert early.tolist() == [True] * 8 + [False] * 8 and torch.equal(late, ~early)
    assert torch.equal(student_mask(4), x_kept)
    student = CouplingStudent(8, seed=3)
    permutations = [m for m in student.layers.transforms if hasattr(m, "order")]
    assert len(permutations) == 1 and not torch.equal(permutations[0].order, torch.arange(16))


def test_decode_is_differentiable_in_the_latents(data):
    ctx, _ = data
    student = build("student", data)
    z = torch.zeros(2, 3, PLAN_DIM, requires_grad=True)
    plans, log_q = student.sample_with_log_prob(z, ctx[:2])
    (plans.square().sum() + log_q.sum()).backward()
    assert z.grad is not None and z.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="do not match"):
        student.decode(torch.zeros(3, PLAN_DIM), ctx[:2])


def test_selection_rules_on_handmade_samples():
    plans = torch.zeros(2, 3, 8, 2)
    plans[0, :, :, 1] = torch.tensor([3.5, -3.5, 0.2])[:, None]  # two overtakes and a follow
    plans[1, :, :, 0] = torch.tensor([10.0, 11.0, 30.0])[:, None]
    log_probs = torch.tensor([[-1.0, -0.5, -3.0], [-2.0, -2.0, -9.0]])
    chosen = select_max_likelihood(plans, log_probs)
    torch.testing.assert_close(chosen, plans[[0, 1], [1, 0]])  # ties: the first
    # the mean of scene 0 is y = 0.07: the near-zero sample; scene 1's mean x is 17
    torch.testing.assert_close(select_closest_to_mean(plans), plans[[0, 1], [2, 1]])


def test_constant_velocity_plan_drives_straight_at_the_current_speed():
    plan = constant_velocity_plan(np.array([0.0, 10.0]))
    assert plan.shape == (2, 8, 2)
    np.testing.assert_allclose(plan[1, :, 0], 10.0 * np.arange(0.5, 4.01, 0.5))
    assert np.all(plan[0] == 0.0) and np.all(plan[:, :, 1] == 0.0)
    tensor = constant_velocity_plan(torch.tensor([4.0], dtype=torch.float64))
    assert tensor.dtype == torch.float64
    torch.testing.assert_close(tensor[0, -1], torch.tensor([16.0, 0.0], dtype=torch.float64))


def fit_steps(model: torch.nn.Module, loss, steps: int = 25, lr: float = 3e-3) -> None:
    """`steps` Adam steps on loss()."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        loss().backward()
        optimizer.step()


@pytest.mark.parametrize("kind", ["teacher", "student", "fm", "regression"])
def test_a_few_training_steps_lower_the_loss(kind, data):
    ctx, expert = data
    torch.manual_seed(0)
    if kind == "teacher":
        model = ARTeacher(blocks=2, **SMALL)
    elif kind == "student":
        model = CouplingStudent(4, **SMALL)
    elif kind == "fm":
        model = FlowMatchingPlanner(hidden=(64, 64), encoder_hidden=(32,))
    else:
        model = RegressionPlanner(**SMALL)
    model.fit_standardisation(ctx, expert)

    def loss(seed: int | None = None) -> torch.Tensor:
        if kind == "fm":
            generator = torch.Generator().manual_seed(seed if seed is not None else 7)
            return model.loss(expert, ctx, generator)
        if kind == "regression":
            return model.loss(expert, ctx)
        return -model.log_prob(expert, ctx).mean()

    with torch.no_grad():
        before = loss(99).item()
    if kind == "fm":
        step = iter(range(1000))
        fit_steps(model, lambda: loss(next(step)))
    else:
        fit_steps(model, loss)
    with torch.no_grad():
        after = loss(99).item()
    assert after < before - (5.0 if kind in ("teacher", "student") else 0.05 * before)
    if kind == "regression":
        assert model(ctx).shape == (64, 8, 2)
