"""bidrive's distillation: the reverse-KL estimator matches the closed-form KL between a Gaussian
student and a Gaussian teacher (flows whose conditioners ignore the plan) within Monte-Carlo
error and is not the forward KL, it trains the student only and refuses an unfrozen teacher,
the data and forward-KL terms are the student's NLLs, the combined loss weighs and skips its
terms, the teacher-sample cache refreshes on schedule with per-refresh seeds, and a few
distillation steps lower the loss."""

from __future__ import annotations

import math

import pytest
import torch

from reprolab.models.flows.autoregressive import MADE
from reprolab.models.flows.coupling import Coupling
from reprolab.studies.bidrive.distillation import (
    TeacherSampleCache,
    data_nll_loss,
    distillation_loss,
    forward_kl_loss,
    freeze,
    reverse_kl_loss,
)
from reprolab.studies.bidrive.planners import (
    PLAN_DIM,
    ARTeacher,
    CouplingStudent,
    FlowPlanner,
    flatten_plans,
)
from tests.models.flows.checks import randomize
from tests.studies.bidrive.conftest import SMALL

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def pair(data, scale: float = 0.1) -> tuple[FlowPlanner, FlowPlanner]:
    """A small frozen teacher and a small student, both with random parameters."""
    torch.manual_seed(0)
    teacher = ARTeacher(blocks=2, **SMALL).fit_standardisation(*data)
    student = CouplingStudent(4, **SMALL).fit_standardisation(*data)
    return freeze(randomize(teacher, 1, scale)), randomize(student, 2, scale)


@torch.no_grad()
def make_gaussian(model: FlowPlanner) -> FlowPlanner:
    """Cut every conditioner's dependence on the plan (keep its dependence on the context), so
    each layer is an elementwise affine map given c and the flow's density is Gaussian."""
    for module in model.modules():
        if isinstance(module, MADE):  # the last layer's inputs: hidden units, then the context
            last = module.layers[-1]
            last.weight[:, : last.in_features - module.context_dim] = 0.0
        elif isinstance(module, Coupling):  # the first layer's inputs: kept coordinates first
            first = module.conditioner.net[0]
            first.weight[:, : len(module.kept)] = 0.0
    return model


@torch.no_grad()
def gaussian_of(model: FlowPlanner, ctx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean [16] and covariance [16, 16] of a Gaussian flow's plans (flattened) at one context
    [1, 36]: τ = A z + b, b = G(0), A's columns G(e_i) − b."""
    latents = torch.cat([torch.zeros(1, PLAN_DIM), torch.eye(PLAN_DIM)]).to(ctx.dtype)
    plans, _ = model.decode(latents[None], ctx)
    flat = flatten_plans(plans[0])
    mean, matrix = flat[0], (flat[1:] - flat[0]).T
    return mean, matrix @ matrix.T


def gaussian_kl(mean_q, cov_q, mean_p, cov_p) -> torch.Tensor:
    """KL(N(mean_q, cov_q) ‖ N(mean_p, cov_p))."""
    precision = torch.linalg.inv(cov_p)
    gap = mean_p - mean_q
    return 0.5 * (
        torch.trace(precision @ cov_q)
        + gap @ precision @ gap
        - len(gap)
        + torch.linalg.slogdet(cov_p).logabsdet
        - torch.linalg.slogdet(cov_q).logabsdet
    )


def test_reverse_kl_estimator_matches_the_gaussian_closed_form(data):
    ctx = data[0][:3].double()
    teacher, student = pair(data, scale=0.15)
    teacher, student = make_gaussian(teacher.double()), make_gaussian(student.double())
    # the flows are affine in z: decoding is exact for Gaussians (a check of the construction)
    mean, cov = gaussian_of(student, ctx[:1])
    z = torch.randn(1, 5, PLAN_DIM, generator=torch.Generator().manual_seed(1), dtype=ctx.dtype)
    plans, log_q = student.decode(z, ctx[:1])
    reference = torch.distributions.MultivariateNormal(mean, cov).log_prob(flatten_plans(plans))
    torch.testing.assert_close(log_q, reference)

    n = 20_000
    with torch.no_grad():
        estimate = reverse_kl_loss(student, teacher, ctx, torch.Generator().manual_seed(0), n)
        # the same draws by hand, for the Monte-Carlo standard error
        z = student.latents(3, n, torch.Generator().manual_seed(0))
        plans, log_q = student.decode(z, ctx)
        per_sample = log_q - teacher.log_prob(plans, ctx)
    torch.testing.assert_close(estimate, per_sample.mean())
    error = (per_sample.var(1) / n).sum().sqrt() / 3
    reverse, forward = [], []
    for s in range(3):
        q, p = gaussian_of(student, ctx[s : s + 1]), gaussian_of(teacher, ctx[s : s + 1])
        reverse.append(gaussian_kl(*q, *p))
        forward.append(gaussian_kl(*p, *q))
    reverse_kl, forward_kl = torch.stack(reverse).mean(), torch.stack(forward).mean()
    assert float(reverse_kl) > 1.0
    assert abs(float(estimate - reverse_kl)) < 4 * float(error)
    assert abs(float(forward_kl - reverse_kl)) > 20 * float(error)  # the direction matters


def test_reverse_kl_trains_the_student_through_the_frozen_teacher(data):
    ctx, _ = data
    teacher, student = pair(data)
    loss = reverse_kl_loss(student, teacher, ctx[:8], torch.Generator().manual_seed(0), 2)
    loss.backward()
    assert all(p.grad is None for p in teacher.parameters())
    assert all(p.grad is not None for p in student.parameters())
    # the gradient runs through the teacher's density too: drop it and it changes
    grads = [p.grad.clone() for p in student.parameters()]
    student.zero_grad()
    z = student.latents(8, 2, torch.Generator().manual_seed(0))
    _, log_q = student.decode(z, ctx[:8])
    log_q.mean().backward()
    assert any(
        not torch.allclose(g, p.grad) for g, p in zip(grads, student.parameters(), strict=True)
    )
    teacher.requires_grad_(True)
    with pytest.raises(ValueError, match="freeze the teacher"):
        reverse_kl_loss(student, teacher, ctx[:8], torch.Generator().manual_seed(0))


def test_data_and_forward_terms_are_the_students_nlls(data):
    ctx, expert = data
    teacher, student = pair(data)
    with torch.no_grad():
        samples = teacher.sample(ctx[:4], 3, torch.Generator().manual_seed(0)).plans
        nll = -student.log_prob(expert[:4], ctx[:4])
        torch.testing.assert_close(data_nll_loss(student, expert[:4], ctx[:4]), nll.mean())
        flat = -student.log_prob(samples.reshape(12, 8, 2), ctx[:4].repeat_interleave(3, 0))
        torch.testing.assert_close(forward_kl_loss(student, samples, ctx[:4]), flat.mean())


def test_distillation_loss_weighs_and_skips_its_terms(data):
    ctx, expert = data
    teacher, student = pair(data)
    samples = teacher.sample(ctx[:4], 2, torch.Generator().manual_seed(0)).plans
    args = (student, teacher, expert[:4], ctx[:4], samples)
    with torch.no_grad():
        total, terms = distillation_loss(*args, torch.Generator().manual_seed(5), 0.5, 2.0, 3.0)
        reverse = reverse_kl_loss(student, teacher, ctx[:4], torch.Generator().manual_seed(5))
        assert terms["reverse"] == pytest.approx(float(reverse), abs=1e-5)
        assert terms["data"] == pytest.approx(float(data_nll_loss(student, expert[:4], ctx[:4])))
        expected = 0.5 * terms["data"] + 2.0 * terms["forward"] + 3.0 * terms["reverse"]
        assert float(total) == pytest.approx(expected, rel=1e-5)
        _, only_data = distillation_loss(*args, torch.Generator(), 1.0, 0.0, 0.0)
    assert set(only_data) == {"data"}


def test_teacher_sample_cache_refreshes_on_schedule_with_per_refresh_seeds(data):
    ctx, _ = data
    teacher, _ = pair(data)
    cache = TeacherSampleCache(teacher, ctx[:6], per_scene=3, refresh=10, seed=4, chunk=4)
    first = cache.samples(0)
    assert first.shape == (6, 3, 8, 2)
    torch.testing.assert_close(cache.samples(9, torch.tensor([1, 5])), first[[1, 5]])
    second = cache.samples(10)
    assert not torch.allclose(second, first)
    third = cache.samples(25)
    # refresh 2 straight away gives the same samples: they depend on (seed, refresh) alone
    direct = TeacherSampleCache(teacher, ctx[:6], per_scene=3, refresh=10, seed=4, chunk=4)
    torch.testing.assert_close(direct.samples(20), third, atol=0, rtol=0)
    # the chunk changes the batch shapes only (float rounding), not the draws
    whole = TeacherSampleCache(teacher, ctx[:6], per_scene=3, refresh=10, seed=4, chunk=64)
    torch.testing.assert_close(whole.samples(20), third, atol=1e-4, rtol=1e-5)
    other = TeacherSampleCache(teacher, ctx[:6], per_scene=3, refresh=10, seed=5)
    assert not torch.allclose(other.samples(0), first)
    with pytest.raises(ValueError, match="positive"):
        TeacherSampleCache(teacher, ctx, refresh=0)


def test_a_few_distillation_steps_lower_the_loss(data):
    ctx, expert = data
    teacher, student = pair(data)
    cache = TeacherSampleCache(teacher, ctx, per_scene=2, refresh=100, seed=0)
    optimizer = torch.optim.Adam(student.parameters(), lr=3e-3)

    def loss(step: int, seed: int) -> torch.Tensor:
        samples = cache.samples(step)
        return distillation_loss(
            student, teacher, expert, ctx, samples, torch.Generator().manual_seed(seed)
        )[0]

    with torch.no_grad():
        before = loss(0, 999).item()
    for step in range(25):
        optimizer.zero_grad()
        loss(step, step).backward()
        optimizer.step()
    with torch.no_grad():
        after = loss(0, 999).item()
    assert math.isfinite(after) and after < before - 5.0
