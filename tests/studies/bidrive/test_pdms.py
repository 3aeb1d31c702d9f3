"""bidrive's synthetic PDM score on handmade plans: NC on a stopped car (and NAVSIM's at-fault
rules), DAC off the road, C and EP of a constant-speed lane keeper, C of harsh braking, TTC of a
stop too close behind a car, the separating-axis box test against an exact polygon test, the
road frame, the spline densification and argument checks."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.bidrive import pdms
from tests.studies.bidrive.conftest import STRAIGHT_2_LANES, T, car, straight_plan


def world(agent_rows: list, road: list | None = None, n_slots: int = 4):
    """road [1, 4], agents [1, A, 7], agents_future [1, A, 40, 2] with empty slots padded."""
    agents = np.zeros((1, n_slots, 7))
    future = np.zeros((1, n_slots, 40, 2))
    for i, (agent, fut) in enumerate(agent_rows):
        agents[0, i], future[0, i] = agent, fut
    return np.array([road or STRAIGHT_2_LANES], dtype=float), agents, future


def score(plan: np.ndarray, speed: float, agent_rows: list, road: list | None = None, **kw):
    road_a, agents, future = world(agent_rows, road)
    ego_speed = np.array([speed])
    ref = pdms.reference_progress(ego_speed, road_a, agents, future)
    return pdms.pdm_score(plan[None], ego_speed, road_a, agents, future, ref, **kw)


# ---------------------------------------------------------------------------------------------
# NC


def test_driving_straight_into_a_stopped_car_gives_nc_zero():
    plan = straight_plan(12.0)
    hit = score(plan, 12.0, [car(30.0, 0.0)])
    assert hit.nc[0] == 0.0 and hit.score[0] == 0.0
    road, agents, future = world([car(30.0, 0.0)])
    assert pdms.collisions(plan[None], np.array([12.0]), road, agents, future)[0]
    # the same car one lane to the left is passed safely
    passed = score(plan, 12.0, [car(30.0, 3.5)])
    assert passed.nc[0] == 1.0 and passed.ttc[0] == 1.0 and passed.score[0] > 0.9


def test_collisions_the_ego_does_not_cause_are_not_counted():
    # a car from behind runs into the slowly moving ego: not at fault
    slow = straight_plan(2.0)
    rear = score(slow, 2.0, [car(-12.0, 0.0, vx=8.0)])
    assert rear.nc[0] == 1.0
    # a car runs into the standing ego from the front: not at fault either
    standing = score(np.zeros((8, 2)), 0.0, [car(25.0, 0.0, vx=-10.0)])
    assert standing.nc[0] == 1.0
    # but the moving ego running into it is
    moving = score(straight_plan(6.0), 6.0, [car(25.0, 0.0, vx=-10.0)])
    assert moving.nc[0] == 0.0


def test_a_static_object_costs_half():
    plan = straight_plan(12.0)
    road, agents, future = world([car(30.0, 0.0, length=1.0, width=1.0)])
    objects = np.zeros((1, 4), dtype=bool)
    objects[0, 0] = True
    ref = np.array([48.0])
    half = pdms.pdm_score(plan[None], np.array([12.0]), road, agents, future, ref, objects=objects)
    full = pdms.pdm_score(plan[None], np.array([12.0]), road, agents, future, ref)
    assert half.nc[0] == 0.5 and full.nc[0] == 0.0


# ---------------------------------------------------------------------------------------------
# DAC, C, EP, TTC


def test_leaving_the_road_gives_dac_zero():
    drift = np.stack([10.0 * T, 0.6 * T**2], axis=-1)  # 9.6 m to the left by 4 s
    out = score(drift, 10.0, [])
    assert out.dac[0] == 0.0 and out.score[0] == 0.0
    # a lane change into the left lane stays on the road
    change = np.stack([10.0 * T, 3.5 * pdms.quintic(T / 3.0)], axis=-1)
    assert score(change, 10.0, []).dac[0] == 1.0


def test_on_a_curved_road_following_the_curve_stays_on_it_and_going_straight_leaves_it():
    road = np.array([[5.25, 0.003, 3.0, 0.0]])
    s = 15.0 * T
    follow, _ = pdms.road_to_ego(s[None], np.zeros((1, 8)), road)
    kept = score(follow[0], 15.0, [], road=list(road[0]))
    assert kept.dac[0] == 1.0 and kept.comfort[0] == 1.0 and kept.ep[0] == pytest.approx(1.0)
    assert score(straight_plan(15.0), 15.0, [], road=list(road[0])).dac[0] == 0.0


def test_constant_speed_in_a_lane_is_comfortable_and_makes_full_progress():
    out = score(straight_plan(14.0), 14.0, [car(20.0, 3.5, vx=14.0)])
    assert out.comfort[0] == 1.0
    assert out.ep[0] == pytest.approx(1.0)
    assert out.nc[0] == out.dac[0] == out.ttc[0] == 1.0
    assert out.score[0] == pytest.approx(1.0)
    # stopping for nothing loses progress, and EP is the progress ratio
    slow = score(straight_plan(14.0, accel=-1.75), 14.0, [])
    assert slow.ep[0] == pytest.approx(slow.progress[0] / 56.0)
    assert 0.4 < slow.ep[0] < 0.9 and slow.comfort[0] == 1.0


def test_harsh_braking_is_uncomfortable_and_gentle_braking_is_not():
    # 16 m/s to standstill in 2 s and stay there
    harsh = np.stack([np.minimum(16.0 * T - 4.0 * T**2, 16.0), np.zeros(8)], axis=-1)
    assert score(harsh, 16.0, []).comfort[0] == 0.0
    assert score(straight_plan(16.0, accel=-2.0), 16.0, []).comfort[0] == 1.0
    # a plan that starts far below the current speed is a hidden brake
    assert score(straight_plan(8.0), 16.0, []).comfort[0] == 0.0


def test_an_abrupt_swerve_breaks_the_yaw_bounds():
    swerve = np.stack([5.0 * T, np.where(T >= 1.0, 3.0, 0.0)], axis=-1)
    sig = pdms.comfort_signals(pdms.densify(swerve[None], np.array([5.0])))
    assert np.abs(sig["yaw_rate"]).max() > pdms.COMFORT["max_abs_yaw_rate"]
    assert score(swerve, 5.0, [], road=[7.0, 0.0, 4.0, -1.75]).comfort[0] == 0.0


def test_stopping_just_behind_a_car_fails_ttc_without_colliding():
    plan = straight_plan(15.0, accel=-3.5)  # 32 m covered and 1 m/s left at 4 s
    front = 32.0 + 0.5 * pdms.EGO_LENGTH
    close = score(plan, 15.0, [car(front + 0.6 + 2.25, 0.0)])
    assert close.nc[0] == 1.0 and close.ttc[0] == 0.0 and close.comfort[0] == 1.0
    assert close.score[0] == pytest.approx((5.0 * close.ep[0] + 2.0) / 12.0)
    far = score(plan, 15.0, [car(front + 5.0 + 2.25, 0.0)])
    assert far.ttc[0] == 1.0


def test_ep_is_one_when_the_reference_barely_moves():
    assert pdms.ego_progress(np.array([0.5, 2.0, 30.0]), np.array([4.0, 40.0, 20.0])) == (
        pytest.approx([1.0, 0.05, 1.0])
    )


# ---------------------------------------------------------------------------------------------
# separating-axis test


def _corners(c, h, length, width):
    u, v = np.array([np.cos(h), np.sin(h)]), np.array([-np.sin(h), np.cos(h)])
    return np.array([c + sl * length / 2 * u + sw * width / 2 * v for sl, sw in
                     ((1, 1), (1, -1), (-1, -1), (-1, 1))])  # fmt: skip


def _cross(u, v):
    return float(u[0] * v[1] - u[1] * v[0])


def _inside(p, poly):
    signs = [_cross(poly[(i + 1) % 4] - poly[i], p - poly[i]) for i in range(4)]
    return all(s > 0 for s in signs) or all(s < 0 for s in signs)


def _segments_cross(p1, p2, q1, q2):
    d1, d2 = _cross(p2 - p1, q1 - p1), _cross(p2 - p1, q2 - p1)
    d3, d4 = _cross(q2 - q1, p1 - q1), _cross(q2 - q1, p2 - q1)
    return d1 * d2 < 0 and d3 * d4 < 0


def polygons_overlap(a, b):
    """Exact test for two convex quadrilaterals: crossing edges or one inside the other."""
    if any(_inside(p, b) for p in a) or any(_inside(p, a) for p in b):
        return True
    return any(
        _segments_cross(a[i], a[(i + 1) % 4], b[j], b[(j + 1) % 4])
        for i in range(4)
        for j in range(4)
    )


def test_box_overlap_on_known_configurations():
    o = np.zeros(2)

    def overlap(cb, hb, lb=4.0, wb=2.0, ha=0.0, la=4.0, wa=2.0):
        return bool(pdms.boxes_overlap(o, ha, la, wa, np.asarray(cb, float), hb, lb, wb))

    assert overlap([0.0, 0.0], 0.0)
    assert overlap([3.9, 0.0], 0.0) and not overlap([4.1, 0.0], 0.0)  # end to end
    assert overlap([0.0, 1.9], 0.0) and not overlap([0.0, 2.1], 0.0)  # side by side
    assert not overlap([4.0, 0.0], 0.0)  # touching is not overlapping
    # a 2 x 2 square turned 45°: its corner reaches √2 from its centre
    reach = 1.0 + np.sqrt(2.0)
    assert overlap([reach - 0.05, 0.0], np.pi / 4, 2.0, 2.0, 0.0, 2.0, 2.0)
    assert not overlap([reach + 0.05, 0.0], np.pi / 4, 2.0, 2.0, 0.0, 2.0, 2.0)
    # crossing at right angles (no corner inside the other box) is an overlap
    assert overlap([0.0, 0.0], np.pi / 2, 10.0, 1.0, 0.0, 10.0, 1.0)
    # diagonal neighbours whose axis-aligned bounding boxes overlap but which do not touch
    assert not overlap([2.2, 2.2], -np.pi / 4, 6.0, 1.0, -np.pi / 4, 6.0, 1.0)
    assert overlap([0.6, 0.6], -np.pi / 4, 6.0, 1.0, -np.pi / 4, 6.0, 1.0)


def test_box_overlap_agrees_with_an_exact_polygon_test():
    rng = np.random.default_rng(0)
    n = 800
    ca = rng.uniform(-1, 1, (n, 2))
    cb = rng.uniform(-4.5, 4.5, (n, 2))
    ha, hb = rng.uniform(-np.pi, np.pi, n), rng.uniform(-np.pi, np.pi, n)
    la, lb = rng.uniform(1, 6, n), rng.uniform(1, 6, n)
    wa, wb = rng.uniform(0.5, 2.5, n), rng.uniform(0.5, 2.5, n)
    fast = pdms.boxes_overlap(ca, ha, la, wa, cb, hb, lb, wb)
    swapped = pdms.boxes_overlap(cb, hb, lb, wb, ca, ha, la, wa)
    exact = np.array(
        [
            polygons_overlap(
                _corners(ca[i], ha[i], la[i], wa[i]), _corners(cb[i], hb[i], lb[i], wb[i])
            )
            for i in range(n)
        ]
    )
    np.testing.assert_array_equal(fast, exact)
    np.testing.assert_array_equal(fast, swapped)
    assert 0.2 < exact.mean() < 0.8  # both outcomes are well represented


# ---------------------------------------------------------------------------------------------
# geometry and densification


def test_road_frame_inverts_road_to_ego_and_is_plain_offsets_on_a_straight_road():
    rng = np.random.default_rng(1)
    road = np.array([[5.25, 0.004, 3.0, 1.75], [5.25, -0.003, 3.0, -3.5], [3.5, 0.0, 2.0, 1.75]])
    s = rng.uniform(-20, 90, (3, 50))
    e = rng.uniform(-6, 6, (3, 50))
    xy, heading = pdms.road_to_ego(s, e, road)
    s2, e2 = pdms.road_frame(xy, road)
    np.testing.assert_allclose(s2, s, atol=1e-9)
    np.testing.assert_allclose(e2, e, atol=1e-9)
    np.testing.assert_allclose(heading, road[:, 1:2] * s)
    np.testing.assert_allclose(xy[2, :, 0], s[2])
    np.testing.assert_allclose(xy[2, :, 1], e[2] - 1.75)
    # the ego sits at s = 0, e = offset
    s0, e0 = pdms.road_frame(np.zeros((3, 1, 2)), road)
    np.testing.assert_allclose(s0[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(e0[:, 0], road[:, 3], atol=1e-12)


def test_densify_interpolates_and_keeps_constant_acceleration_exact():
    plan = straight_plan(10.0, accel=-1.5) + np.array([0.0, 0.2]) * T[:, None] ** 2
    roll = pdms.densify(plan[None], np.array([10.0]))
    np.testing.assert_allclose(roll.xy[0, 5::5], plan, atol=1e-9)
    np.testing.assert_allclose(roll.xy[0, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(roll.vel[0, 0], [10.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(roll.acc[0], np.tile([-1.5, 0.4], (41, 1)), atol=1e-9)
    assert roll.heading[0, 0] == 0.0
    # a standing plan keeps its heading
    still = pdms.densify(np.zeros((1, 8, 2)), np.array([0.0]))
    np.testing.assert_array_equal(still.heading, 0.0)


def test_ade_and_min_ade():
    expert = np.stack([straight_plan(10.0), straight_plan(5.0)])
    shifted = expert + np.array([0.0, 3.0])
    np.testing.assert_allclose(pdms.ade(shifted, expert), [3.0, 3.0])
    samples = np.stack([shifted, expert + np.array([4.0, 0.0]), expert + 1.0], axis=1)
    np.testing.assert_allclose(pdms.min_ade(samples, expert), [np.sqrt(2.0)] * 2)


# ---------------------------------------------------------------------------------------------
# arguments


def test_bad_arguments_are_named():
    road, agents, future = world([car(30.0, 0.0)])
    speed, ref = np.array([10.0]), np.array([40.0])
    plan = straight_plan(10.0)[None]
    with pytest.raises(ValueError, match="plans"):
        pdms.pdm_score(plan[:, :5], speed, road, agents, future, ref)
    with pytest.raises(ValueError, match="plans"):
        pdms.pdm_score(np.full_like(plan, np.nan), speed, road, agents, future, ref)
    with pytest.raises(ValueError, match="ego_speed"):
        pdms.pdm_score(plan, np.array([1.0, 2.0]), road, agents, future, ref)
    with pytest.raises(ValueError, match="road"):
        pdms.pdm_score(plan, speed, road[:, :3], agents, future, ref)
    with pytest.raises(ValueError, match="agents_future"):
        pdms.pdm_score(plan, speed, road, agents, future[:, :, :20], ref)
    with pytest.raises(ValueError, match="ref_progress"):
        pdms.pdm_score(plan, speed, road, agents, future, np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="objects"):
        pdms.pdm_score(plan, speed, road, agents, future, ref, objects=np.zeros((1, 2), bool))
    with pytest.raises(ValueError, match="expert"):
        pdms.ade(plan, np.zeros((2, 8, 2)))
    with pytest.raises(ValueError, match="samples"):
        pdms.min_ade(plan, plan)
