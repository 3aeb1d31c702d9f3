"""bidrive's latent optimisation: the torch densification and road projection against pdms's
numpy versions, each cost term on handmade plans (a lane keeper, a plan through a stopped car,
one leaving the road, harsh braking, a too-tight curve), an exact disk-clearance value, finite
gradients, and Adam on a linear "student" removing a collision, deterministically."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from reprolab.studies.bidrive import latent_optimization as lo
from reprolab.studies.bidrive import pdms
from tests.studies.bidrive.conftest import STRAIGHT_2_LANES, T, car, straight_plan

STRAIGHT_3_LANES_MIDDLE = [5.25, 0.0, 3.0, 0.0]


def world(agent_rows: list, road: list, n_slots: int = 4):
    """road [1, 4], agents [1, A, 7], agents_future [1, A, 40, 2] with empty slots padded."""
    agents = np.zeros((1, n_slots, 7))
    future = np.zeros((1, n_slots, 40, 2))
    for i, (agent, fut) in enumerate(agent_rows):
        agents[0, i], future[0, i] = agent, fut
    return np.array([road], dtype=float), agents, future


def context(speed: float, agent_rows: list, road: list) -> lo.PlanningContext:
    """A one-scene float64 planning context."""
    road_a, agents, future = world(agent_rows, road)
    return lo.PlanningContext.from_arrays(
        np.array([speed]), road_a, agents, future, dtype=torch.float64
    )


def terms(plan: np.ndarray, ctx: lo.PlanningContext) -> dict[str, float]:
    """The unweighted collision, drivable and dynamics costs of one plan [8, 2]."""
    roll = lo.densify_torch(torch.tensor(plan[None]), ctx.ego_speed)
    return {
        "collision": lo.collision_cost(roll, ctx).item(),
        "drivable": lo.drivable_cost(roll, ctx.road).item(),
        "dynamics": lo.dynamics_cost(roll).item(),
    }


# ---------------------------------------------------------------------------------------------
# agreement with pdms


def test_densify_torch_matches_pdms_densify():
    rng = np.random.default_rng(0)
    speed = rng.uniform(0.0, 15.0, 64)
    plans = speed[:, None, None] * np.stack([T, 0 * T], -1) + rng.normal(0.0, 1.0, (64, 8, 2))
    plans[:4] = rng.normal(0.0, 0.05, (4, 8, 2))  # near standstill: the held heading matters
    speed[:4] = 0.0
    ref = pdms.densify(plans, speed)
    roll = lo.densify_torch(torch.tensor(plans), torch.tensor(speed))
    np.testing.assert_allclose(roll.xy.numpy(), ref.xy, atol=1e-5)
    np.testing.assert_allclose(roll.vel.numpy(), ref.vel, atol=1e-5)
    np.testing.assert_allclose(roll.acc.numpy(), ref.acc, atol=1e-5)
    np.testing.assert_allclose(roll.speed.numpy(), ref.speed, atol=1e-5)
    heading = np.stack([np.cos(ref.heading), np.sin(ref.heading)], axis=-1)
    np.testing.assert_allclose(roll.direction.numpy(), heading, atol=1e-5)
    # the rollout starts at the origin with the ego's speed and the jerk is the accel's rate
    np.testing.assert_allclose(roll.xy[:, 0].numpy(), 0.0, atol=1e-12)
    np.testing.assert_allclose(roll.vel[:, 0, 0].numpy(), speed, atol=1e-12)
    np.testing.assert_allclose(
        roll.lon_jerk.numpy(), np.diff(roll.lon_accel.numpy(), axis=1) / 0.1, atol=1e-9
    )
    # float32 stays close too (what a model will feed it)
    roll32 = lo.densify_torch(torch.tensor(plans, dtype=torch.float32), torch.tensor(speed))
    np.testing.assert_allclose(roll32.xy.numpy(), ref.xy, atol=1e-4)


def test_road_frame_torch_matches_pdms_road_frame():
    rng = np.random.default_rng(1)
    road = np.array(
        [
            [5.25, 0.0, 3.0, 0.0],
            [3.5, 0.003, 2.0, -1.75],
            [5.25, -0.01, 3.0, 3.5],
            [3.5, 1e-14, 2, 0],
        ]
    )
    xy = rng.uniform([-10.0, -8.0], [80.0, 8.0], (4, 41, 2))
    s_ref, e_ref = pdms.road_frame(xy, road)
    s, e = lo.road_frame_torch(torch.tensor(xy), torch.tensor(road))
    np.testing.assert_allclose(s.numpy(), s_ref, atol=1e-9)
    np.testing.assert_allclose(e.numpy(), e_ref, atol=1e-9)
    # and it inverts pdms.road_to_ego on the curved road
    back, _ = pdms.road_to_ego(s.numpy(), e.numpy(), road)
    np.testing.assert_allclose(back, xy, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# cost terms on handmade plans


def test_lane_keeping_away_from_agents_costs_nothing():
    ctx = context(
        12.0, [car(40.0, 3.5, vx=12.0), car(-30.0, -3.5, vx=12.0)], STRAIGHT_3_LANES_MIDDLE
    )
    cost = terms(straight_plan(12.0), ctx)
    assert cost["collision"] < 1e-3
    assert cost["drivable"] < 1e-3
    assert cost["dynamics"] == 0.0


def test_a_plan_through_a_stopped_car_has_a_large_collision_cost():
    plan = straight_plan(12.0)
    hit = context(12.0, [car(30.0, 0.0)], STRAIGHT_3_LANES_MIDDLE)
    assert terms(plan, hit)["collision"] > 20.0
    road, agents, future = world([car(30.0, 0.0)], STRAIGHT_3_LANES_MIDDLE)
    assert pdms.collisions(plan[None], np.array([12.0]), road, agents, future)[0]
    # the same car with its mask off is ignored
    agents[0, 0, 6] = 0.0
    masked = lo.PlanningContext.from_arrays(np.array([12.0]), road, agents, future)
    assert terms(plan, masked)["collision"] == 0.0
    # and a stop well before it (2 m/s² from 12 m/s covers 36 m: this one brakes harder)
    stop = np.stack([np.minimum(12.0 * T - 2.4 * T**2, 15.0), 0 * T], axis=-1)
    assert terms(stop, hit)["collision"] < 1e-3


def test_collision_cost_is_the_softplus_of_the_disk_clearance():
    """A same-sized car alongside at the ego's speed, 3.5 m to the left: every state's nearest
    disk pair is 3.5 m apart centre to centre, a clearance of 3.5 − 1 − 1 = 1.5 m."""
    ctx = context(10.0, [car(0.0, 3.5, vx=10.0, length=5.0, width=2.0)], STRAIGHT_3_LANES_MIDDLE)
    beta, r_safe, clearance = 5.0, 1.0, 1.5
    expected = 40 * math.log1p(math.exp(beta * (r_safe - clearance))) / beta
    assert terms(straight_plan(10.0), ctx)["collision"] == pytest.approx(expected, rel=1e-9)


def test_leaving_the_road_has_a_large_drivable_cost():
    ctx = context(12.0, [], STRAIGHT_2_LANES)
    drift = np.stack([12.0 * T, 8.0 * (T / 4.0) ** 2], axis=-1)  # 8 m left of a 7 m road
    off = terms(drift, ctx)["drivable"]
    road, agents, future = world([], STRAIGHT_2_LANES)
    assert pdms.drivable_area(pdms.densify(drift[None], np.array([12.0])), road)[0] == 0.0
    kept = terms(straight_plan(12.0), ctx)["drivable"]  # right lane, 0.75 m of margin
    assert off > 10.0 and kept < off / 50.0


def test_harsh_braking_and_a_tight_curve_have_a_dynamics_cost():
    ctx = context(12.0, [], STRAIGHT_3_LANES_MIDDLE)
    gentle = straight_plan(12.0, accel=-2.0)  # still moving at 4 s
    assert terms(gentle, ctx)["dynamics"] == 0.0
    harsh = np.stack([np.where(T < 2.0, 12.0 * T - 3.0 * T**2, 12.0), 0 * T], axis=-1)
    assert terms(harsh, ctx)["dynamics"] > 1.0
    assert pdms.comfortable(pdms.densify(harsh[None], np.array([12.0])))[0] == 0.0
    # a 25 m radius at 15 m/s is 9 m/s² of lateral acceleration (> 4.89)
    radius, speed = 25.0, 15.0
    angle = speed * T / radius
    arc = np.stack([radius * np.sin(angle), radius * (1.0 - np.cos(angle))], axis=-1)
    roll = lo.densify_torch(torch.tensor(arc[None]), torch.tensor([speed]))
    assert roll.lat_accel[0, 10:30].numpy() == pytest.approx(9.0, rel=0.05)
    assert roll.curvature[0, 10:30].numpy() == pytest.approx(1.0 / radius, rel=0.05)
    assert terms(arc, context(speed, [], STRAIGHT_3_LANES_MIDDLE))["dynamics"] > 100.0


def test_gradients_are_finite_and_point_away_from_the_car():
    ctx = context(12.0, [car(30.0, 0.0), car(20.0, 0.0)], STRAIGHT_3_LANES_MIDDLE)
    cases = [straight_plan(12.0), straight_plan(0.0), straight_plan(12.0, y=9.0)]
    for plan, speed in zip(cases, [12.0, 0.0, 12.0], strict=True):
        x = torch.tensor(plan[None], requires_grad=True)
        local = dataclasses.replace(ctx, ego_speed=torch.tensor([speed]))
        costs = lo.plan_costs(x, torch.zeros(1, dtype=torch.float64), local)
        (grad,) = torch.autograd.grad(costs.total.sum(), x)
        assert torch.isfinite(costs.total).all() and torch.isfinite(grad).all()
    # through the cars: a small step down the collision gradient lowers the collision cost
    x = torch.tensor(straight_plan(12.0)[None], requires_grad=True)
    roll = lo.densify_torch(x, ctx.ego_speed)
    before = lo.collision_cost(roll, ctx)
    (grad,) = torch.autograd.grad(before.sum(), x)
    assert grad.abs().sum() > 0.0
    stepped = (x - 1e-3 * grad / grad.norm()).detach()
    assert lo.collision_cost(lo.densify_torch(stepped, ctx.ego_speed), ctx) < before


# ---------------------------------------------------------------------------------------------
# latent optimisation


def linear_student(base: np.ndarray):
    """A differentiable stand-in for the student: plans = base + z W, log q = log N(z; 0, I).

    W's first row moves the plan one lane left (a 10 m quintic per unit of z), its second
    brakes (8 m/s² per unit), the other 14 make small fixed smooth bends."""
    rng = np.random.default_rng(2)
    u = np.clip(T / 3.0, 0.0, 1.0)
    w = np.zeros((16, 8, 2))
    w[0, :, 1] = 10.0 * u**3 * (10.0 - 15.0 * u + 6.0 * u * u)
    w[1, :, 0] = -0.5 * 8.0 * T**2
    w[2:] = 0.1 * rng.normal(size=(14, 1, 2)) * (T / 4.0)[None, :, None] ** 2
    weight = torch.tensor(w.reshape(16, 16))
    base_t = torch.tensor(base)[:, None]  # [B, 1, 8, 2]

    def decode(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        plans = base_t + (z @ weight).reshape(*z.shape[:2], 8, 2)
        log_q = -0.5 * (z * z).sum(dim=-1) - 8.0 * math.log(2.0 * math.pi)
        return plans, log_q

    return decode


def obstacle_scenes():
    """Two scenes, each with a stopped car in the ego lane that a constant speed plan hits."""
    road = np.array([STRAIGHT_3_LANES_MIDDLE, [5.25, 0.002, 3.0, 0.0]])
    agents, future = np.zeros((2, 4, 7)), np.zeros((2, 4, 40, 2))
    for i, x in enumerate((32.0, 28.0)):
        a, f = car(x, 0.0)
        agents[i, 0], future[i, 0] = a, f
    speed = np.array([11.0, 10.0])
    base = np.stack([straight_plan(11.0), straight_plan(10.0)])
    return speed, road, agents, future, base


def test_optimise_latents_lowers_j_and_removes_the_collision():
    speed, road, agents, future, base = obstacle_scenes()
    ctx = lo.PlanningContext.from_arrays(speed, road, agents, future, dtype=torch.float64)
    z0 = 0.05 * torch.tensor(np.random.default_rng(3).normal(size=(2, 4, 16)))
    decode = linear_student(base)
    plans0, _ = decode(z0)
    assert all(
        pdms.collisions(plans0[:, k].numpy(), speed, road, agents, future).all() for k in range(4)
    )
    plans, j, history = lo.optimise_latents(decode, z0, ctx)
    assert plans.shape == (2, 8, 2) and j.shape == (2,) and history.total.shape == (11, 2, 4)
    initial = history.total[0].min(dim=1).values
    torch.testing.assert_close(j, history.total.amin(dim=(0, 2)))  # the best iterate of all
    assert (j < 0.5 * initial).all()
    assert not pdms.collisions(plans.numpy(), speed, road, agents, future).any()
    # the returned plan and J are those of the picked candidate's returned latents
    rows = torch.arange(2)
    z_best = history.best_z[rows, history.pick][:, None]
    again_plans, again_log_q = decode(z_best)
    torch.testing.assert_close(again_plans[:, 0], plans)
    again = lo.plan_costs(again_plans[:, 0], again_log_q[:, 0], ctx)
    torch.testing.assert_close(again.total, j)


def test_optimise_latents_is_deterministic_and_leaves_its_inputs_alone():
    speed, road, agents, future, base = obstacle_scenes()
    ctx = lo.PlanningContext.from_arrays(speed, road, agents, future, dtype=torch.float64)
    z0 = 0.05 * torch.tensor(np.random.default_rng(3).normal(size=(2, 4, 16)))
    z_copy = z0.clone()
    first = lo.optimise_latents(linear_student(base), z0, ctx)
    second = lo.optimise_latents(linear_student(base), z0, ctx)
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    assert torch.equal(first[2].total, second[2].total)
    assert torch.equal(z0, z_copy)
    # zero steps returns the best initial candidate; the last iterate alone may be worse
    plans, j, history = lo.optimise_latents(linear_student(base), z0, ctx, steps=0)
    assert torch.equal(j, history.total[0].min(dim=1).values)
    _, j_last, last = lo.optimise_latents(linear_student(base), z0, ctx, keep_best=False)
    torch.testing.assert_close(j_last, last.total[-1].min(dim=1).values)
    assert (j_last >= first[1]).all()


def test_adam_steps_follow_the_textbook_update():
    """First step: lr · g / (|g| + ε) (bias corrections cancel); second: by hand."""
    param = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    adam = lo._Adam(param, lr=0.05)
    g1 = torch.tensor([0.3, -4.0, 0.0], dtype=torch.float64)
    adam.step(g1)
    torch.testing.assert_close(param, torch.tensor([0.95, -1.95, 0.5], dtype=torch.float64))
    g2 = torch.tensor([-0.1, 2.0, 1.0], dtype=torch.float64)
    adam.step(g2)
    m = (0.9 * 0.1 * g1 + 0.1 * g2) / (1 - 0.9**2)
    v = (0.999 * 0.001 * g1**2 + 0.001 * g2**2) / (1 - 0.999**2)
    expected = torch.tensor([0.95, -1.95, 0.5], dtype=torch.float64) - 0.05 * m / (v.sqrt() + 1e-8)
    torch.testing.assert_close(param, expected)


def test_defaults_and_bad_arguments():
    w = lo.CostWeights()
    assert (w.likelihood, w.collision, w.drivable, w.dynamics) == (1.0, 10.0, 10.0, 1.0)
    assert (w.r_safe, w.beta) == (1.0, 5.0)
    speed, road, agents, future, base = obstacle_scenes()
    ctx = lo.PlanningContext.from_arrays(speed, road, agents, future, dtype=torch.float64)
    decode = linear_student(base)
    with pytest.raises(ValueError, match="z0"):
        lo.optimise_latents(decode, torch.zeros(2, 16, dtype=torch.float64), ctx)
    with pytest.raises(ValueError, match="ctx"):
        lo.optimise_latents(decode, torch.zeros(3, 4, 16, dtype=torch.float64), ctx)
    with pytest.raises(ValueError, match="decode"):
        lo.optimise_latents(
            lambda z: decode(z)[::-1], torch.zeros(2, 4, 16, dtype=torch.float64), ctx
        )
    with pytest.raises(ValueError, match="plans"):
        lo.densify_torch(torch.zeros(2, 7, 2), torch.zeros(2))
