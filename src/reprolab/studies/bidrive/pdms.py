"""bidrive's synthetic PDM score: NAVSIM's PDMS re-implemented on the synthetic road world.

PDMS = NC · DAC · (5·TTC + 5·EP + 2·C) / 12 per scene, with the sub-scores below. The scene world
(a road of constant curvature, agents with scripted 10 Hz futures) is the one of `scenes`; the
road geometry lives here because both the scorer and the scene generator use it.

Frame and road. Plans are 8 waypoints (x, y) at 2 Hz over 4 s in the ego frame (ego at the
origin, heading +x, at t = 0). A road is four numbers: half-width w, curvature κ (1/m, > 0
turns left), lane count and the ego's lateral offset e₀ from the road centre (positive left).
Its centreline passes through (0, −e₀) with heading 0 and bends with constant curvature κ;
`road_frame` maps a point to arc length s along it and signed lateral offset e (stable at κ = 0).

Densification (no LQR tracker, unlike NAVSIM). The plan is a cubic spline through the origin and
the 8 waypoints (knots t = 0, 0.5, …, 4 s), per coordinate, *clamped at the start* to the ego's
current velocity (v₀, 0) and *not-a-knot* at the end, sampled at 10 Hz (41 states, t = 0 … 4 s).
The clamped start ties the plan to the current state as NAVSIM's tracker does (a plan that starts
at the wrong speed pays in comfort); not-a-knot reproduces constant-acceleration motion exactly,
so a smooth plan gets no spurious jerk. The spline is linear in (waypoints, v₀), so it is
precomputed once as (10 → 41) matrices for position, velocity and acceleration and applied to
all plans with one matrix product. The ego heading is the direction of the spline velocity, held at
its last value while the speed is below 0.5 m/s (heading 0 at t = 0). The ego box is
5.0 m × 2.0 m centred on the plan point (NAVSIM's is the rear axle of a 5.18 × 2.30 m Pacifica).

Sub-scores, all over the 40 states t = 0.1 … 4 s:
* NC: oriented ego and agent boxes overlap (separating-axis test on the four box axes). Each
  agent's collision is judged at its first contact, as in NAVSIM: it counts only if the ego
  moves then (speed ≥ 0.05 m/s) and the agent's centre is not behind the ego's rear edge (it
  ran into the ego) unless that agent is stopped; NAVSIM's at-fault classes reduced to these
  two rules (no lane-based "lateral" fault logic). NC = 0 for an at-fault collision with a
  vehicle, ½ if the only ones are with static objects (agents flagged in `objects`), 1
  otherwise. A stopped *vehicle* counts fully (NAVSIM's STOPPED_TRACK collision); the smoke
  scenes hold vehicles only, so NC ∈ {0, 1} there. Pairs whose centres are farther apart than
  the sum of the half-diagonals skip the separating-axis test.
* DAC: 0 if any ego corner has |e| > w at any state.
* TTC: 0 if at some state where the ego moves, the ego box moved ahead at constant velocity
  (its speed along its heading) by δ ∈ {0, 0.3, 0.6, 0.9} s overlaps an agent at its scripted
  position at t + δ (beyond 4 s an agent continues at its last velocity), under the same
  at-fault filter as NC applied at every step; agents the ego is in contact with at some time
  are left out, as NAVSIM does, so TTC only adds near misses to NC.
* EP: progress (arc length s of the last state) divided by the largest progress among the safe
  (NC = 1, DAC = 1) plans of a reference lattice, clipped to [0, 1]; EP = 1 if that maximum is
  below 5 m. The lattice has 65 plans per scene (the card's 64 rounded to a full grid): 5
  lateral targets (e₀ + {−7, −3.5, 0, 3.5, 7} m, a quintic move over the first 3 s, so every lane
  of a 3-lane road is reachable) × 13 target speeds v₀·{0, 1/12, …, 1}, reached by braking at
  3 m/s². The synthetic world has no speed limit, so the reference never speeds up: keeping
  the current speed scores EP = 1 and needless slowing is what EP penalises.
* C: nuPlan's six comfort bounds (the card's five plus |jerk magnitude| ≤ 8.37): longitudinal
  acceleration in (−4.05, 2.40) m/s², |lateral acceleration| < 4.89 m/s², |longitudinal jerk|
  < 4.13 m/s³, |jerk magnitude| < 8.37 m/s³, |yaw rate| < 0.95 rad/s, |yaw acceleration|
  < 1.93 rad/s². Accelerations are the spline's, in the heading frame, smoothed by a
  Savitzky–Golay filter (window 7, order 2); jerks are its first derivative (window 15, order
  2); yaw rate and yaw acceleration are the first (order 2) and second (order 3) derivatives of
  the unwrapped heading over a window of 5: the windows NAVSIM's implementation effectively
  uses (its acceleration window is 8; an odd 7 here). Each filter is scipy's `savgol_filter`
  (mode "interp") precomputed as a [41 × 41] matrix, so filtering all plans is one product.

Agents: `agents` [N, A, 7] = (x, y, vx, vy, length, width, mask) at t = 0 and `agents_future`
[N, A, 40, 2] their positions at t = 0.1 … 4 s. An agent's heading is the direction of its
velocity (central differences) where it moves faster than 0.5 m/s, else the road's tangent at
its position.

Everything is vectorised over scenes; `reference_progress` loops over the 65 lattice members.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.signal import savgol_filter

if TYPE_CHECKING:
    from reprolab.studies.bidrive.scenes import Scenes

DT = 0.1  # s, the densified plan's and the agents' step
STEPS = 40  # 10 Hz states after t = 0
N_WAYPOINTS = 8
WAYPOINT_STRIDE = 5  # dense steps per waypoint (2 Hz)
HORIZON = DT * STEPS
LANE_WIDTH = 3.5
EGO_LENGTH = 5.0
EGO_WIDTH = 2.0
STOPPED_SPEED = 0.05  # m/s: below it the ego (or an agent) counts as stopped
HEADING_HOLD_SPEED = 0.5  # m/s: below it the ego keeps its last heading
AGENT_HEADING_SPEED = 0.5  # m/s: below it an agent takes the road's heading
TTC_STEPS = (0, 3, 6, 9)  # forward projections of 0, 0.3, 0.6, 0.9 s
EP_MIN_PROGRESS = 5.0  # m: below this reference progress EP = 1
LATTICE_SHIFTS = (-2 * LANE_WIDTH, -LANE_WIDTH, 0.0, LANE_WIDTH, 2 * LANE_WIDTH)
LATTICE_SPEEDS = 13
LATTICE_SHIFT_TIME = 3.0  # s
LATTICE_BRAKE = 3.0  # m/s²
COMFORT = {
    "min_lon_accel": -4.05,
    "max_lon_accel": 2.40,
    "max_abs_lat_accel": 4.89,
    "max_abs_lon_jerk": 4.13,
    "max_abs_mag_jerk": 8.37,
    "max_abs_yaw_rate": 0.95,
    "max_abs_yaw_accel": 1.93,
}
SUB_SCORES = ("NC", "DAC", "TTC", "EP", "C")


# ---------------------------------------------------------------------------------------------
# road geometry


def _per_scene(values: np.ndarray, ndim: int) -> np.ndarray:
    """[N] values reshaped to broadcast against an array of `ndim` dimensions led by N."""
    return values.reshape(-1, *([1] * (ndim - 1)))


def road_frame(xy: np.ndarray, road: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arc length s and signed lateral offset e (left positive) of ego-frame points.

    xy is [N, ..., 2], road [N, 4]; s and e are [N, ...]. Exact for the constant-curvature
    centreline and written in a form that stays stable as κ → 0 (then s = x, e = y + e₀).
    """
    kappa = _per_scene(road[:, 1], xy.ndim - 1)
    offset = _per_scene(road[:, 3], xy.ndim - 1)
    x, dy = xy[..., 0], xy[..., 1] + offset
    r2 = x * x + dy * dy
    root = np.sqrt(np.maximum((1.0 - kappa * dy) ** 2 + (kappa * x) ** 2, 0.0))
    e = (2.0 * dy - kappa * r2) / (1.0 + root)
    straight = np.abs(kappa) < 1e-12
    safe = np.where(straight, 1.0, kappa)
    s = np.where(straight, x, np.arctan2(kappa * x, 1.0 - kappa * dy) / safe)
    return s, e


def road_to_ego(s: np.ndarray, e: np.ndarray, road: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ego-frame points [N, ..., 2] and road headings [N, ...] of road coordinates (s, e)."""
    kappa = _per_scene(road[:, 1], s.ndim)
    offset = _per_scene(road[:, 3], s.ndim)
    angle = kappa * s
    x = s * np.sinc(angle / np.pi) - e * np.sin(angle)
    y = -offset + s * np.sin(angle / 2.0) * np.sinc(angle / (2.0 * np.pi)) + e * np.cos(angle)
    return np.stack([x, y], axis=-1), np.broadcast_to(angle, s.shape).copy()


# ---------------------------------------------------------------------------------------------
# argument checks


def _check_plans(plans: np.ndarray, name: str = "plans") -> np.ndarray:
    plans = np.asarray(plans, dtype=float)
    if plans.ndim != 3 or plans.shape[1:] != (N_WAYPOINTS, 2):
        raise ValueError(f"{name}: expected shape [N, {N_WAYPOINTS}, 2], got {plans.shape}")
    if not np.isfinite(plans).all():
        raise ValueError(f"{name}: must be finite")
    return plans


def _check_scene_arrays(
    n: int,
    ego_speed: np.ndarray,
    road: np.ndarray,
    agents: np.ndarray,
    agents_future: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ego_speed = np.asarray(ego_speed, dtype=float)
    road = np.asarray(road, dtype=float)
    agents = np.asarray(agents, dtype=float)
    agents_future = np.asarray(agents_future, dtype=float)
    if ego_speed.shape != (n,):
        raise ValueError(f"ego_speed: expected shape [{n}], got {ego_speed.shape}")
    if road.shape != (n, 4):
        raise ValueError(f"road: expected shape [{n}, 4], got {road.shape}")
    if agents.ndim != 3 or agents.shape[0] != n or agents.shape[2] != 7:
        raise ValueError(f"agents: expected shape [{n}, A, 7], got {agents.shape}")
    want = (n, agents.shape[1], STEPS, 2)
    if agents_future.shape != want:
        raise ValueError(f"agents_future: expected shape {list(want)}, got {agents_future.shape}")
    return ego_speed, road, agents, agents_future


# ---------------------------------------------------------------------------------------------
# densification


@dataclass(frozen=True)
class Rollout:
    """A plan densified to 10 Hz: states t = 0, 0.1, …, 4 s (41 of them) in the ego frame."""

    xy: np.ndarray  # [N, 41, 2]
    vel: np.ndarray  # [N, 41, 2]
    acc: np.ndarray  # [N, 41, 2]
    speed: np.ndarray  # [N, 41]
    heading: np.ndarray  # [N, 41]


@cache
def _spline_operators() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[10, 41] maps from (9 knot values, start slope) to position, velocity, acceleration
    at the 41 dense times (stored contiguous: a transposed view makes the product 100× slower)."""
    knots = np.arange(N_WAYPOINTS + 1) * (WAYPOINT_STRIDE * DT)
    dense = np.arange(STEPS + 1) * DT
    values = CubicSpline(
        knots, np.eye(len(knots)), bc_type=((1, np.zeros(len(knots))), "not-a-knot")
    )
    slope = CubicSpline(knots, np.zeros(len(knots)), bc_type=((1, 1.0), "not-a-knot"))
    ops = [np.column_stack([values(dense, d), slope(dense, d)]).T.copy() for d in range(3)]
    return ops[0], ops[1], ops[2]


@cache
def _savgol_operator(window: int, order: int, deriv: int) -> np.ndarray:
    """[41, 41] matrix of scipy's Savitzky–Golay filter (mode "interp") on a 41-sample signal at
    10 Hz, so that filtering many signals is one product instead of a least-squares fit each."""
    eye = np.eye(STEPS + 1)
    return savgol_filter(eye, window, order, deriv=deriv, delta=DT, axis=0).T.copy()


def _savgol(signal: np.ndarray, window: int, order: int, deriv: int = 0) -> np.ndarray:
    """`scipy.signal.savgol_filter` of [N, 41] signals along time."""
    return signal @ _savgol_operator(window, order, deriv)


def _hold_heading(raw: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """Heading with the last value kept while the speed is below HEADING_HOLD_SPEED."""
    moving = speed >= HEADING_HOLD_SPEED
    moving[:, 0] = True
    raw = raw.copy()
    raw[:, 0] = 0.0
    last = np.where(moving, np.arange(raw.shape[1])[None, :], 0)
    last = np.maximum.accumulate(last, axis=1)
    return np.take_along_axis(raw, last, axis=1)


def densify(plans: np.ndarray, ego_speed: np.ndarray) -> Rollout:
    """The 10 Hz rollout of plans [N, 8, 2] from an ego moving at ego_speed [N] along +x."""
    plans = _check_plans(plans)
    ego_speed = np.asarray(ego_speed, dtype=float)
    if ego_speed.shape != (len(plans),):
        raise ValueError(f"ego_speed: expected shape [{len(plans)}], got {ego_speed.shape}")
    knots = np.concatenate([np.zeros((len(plans), 1, 2)), plans], axis=1)  # [N, 9, 2]
    start = np.stack([ego_speed, np.zeros_like(ego_speed)], axis=-1)  # [N, 2]
    pos_op, vel_op, acc_op = _spline_operators()

    flat = np.concatenate([knots, start[:, None, :]], axis=1).transpose(0, 2, 1)  # [N, 2, 10]
    flat = flat.reshape(-1, knots.shape[1] + 1)

    def apply(op: np.ndarray) -> np.ndarray:
        return (flat @ op).reshape(len(plans), 2, -1).transpose(0, 2, 1)

    xy, vel, acc = apply(pos_op), apply(vel_op), apply(acc_op)
    speed = np.hypot(vel[..., 0], vel[..., 1])
    heading = _hold_heading(np.arctan2(vel[..., 1], vel[..., 0]), speed)
    return Rollout(xy=xy, vel=vel, acc=acc, speed=speed, heading=heading)


# ---------------------------------------------------------------------------------------------
# agents and boxes


@dataclass(frozen=True)
class AgentTracks:
    """Agents' states at t = 0, 0.1, …, 4.9 s (steps past 4 s extrapolated at constant velocity)."""

    xy: np.ndarray  # [N, A, 50, 2]
    heading: np.ndarray  # [N, A, 50]
    speed: np.ndarray  # [N, A, 50]
    length: np.ndarray  # [N, A]
    width: np.ndarray  # [N, A]
    mask: np.ndarray  # [N, A] bool
    objects: np.ndarray  # [N, A] bool: static objects (NC ½)


def agent_tracks(
    agents: np.ndarray,
    agents_future: np.ndarray,
    road: np.ndarray,
    objects: np.ndarray | None = None,
) -> AgentTracks:
    """Agents' boxes over time from their t = 0 state and scripted futures (module docstring)."""
    n, a = agents.shape[:2]
    xy = np.concatenate([agents[:, :, None, :2], agents_future], axis=2)  # [N, A, 41, 2]
    vel = np.gradient(xy, DT, axis=2) if xy.shape[1] else np.zeros_like(xy)
    extra = max(TTC_STEPS)
    ahead = np.arange(1, extra + 1) * DT
    tail = xy[:, :, -1:, :] + vel[:, :, -1:, :] * ahead[None, None, :, None]
    xy = np.concatenate([xy, tail], axis=2)
    vel = np.concatenate([vel, np.repeat(vel[:, :, -1:, :], extra, axis=2)], axis=2)
    speed = np.hypot(vel[..., 0], vel[..., 1])
    s, _ = road_frame(xy, road)
    tangent = _per_scene(road[:, 1], s.ndim) * s
    heading = np.where(speed >= AGENT_HEADING_SPEED, np.arctan2(vel[..., 1], vel[..., 0]), tangent)
    mask = agents[:, :, 6] > 0.5
    if objects is None:
        objects = np.zeros((n, a), dtype=bool)
    objects = np.asarray(objects, dtype=bool)
    if objects.shape != (n, a):
        raise ValueError(f"objects: expected shape [{n}, {a}], got {objects.shape}")
    return AgentTracks(
        xy=xy,
        heading=heading,
        speed=speed,
        length=agents[:, :, 4],
        width=agents[:, :, 5],
        mask=mask,
        objects=objects & mask,
    )


def boxes_overlap(
    center_a: np.ndarray,
    heading_a: np.ndarray,
    length_a: np.ndarray | float,
    width_a: np.ndarray | float,
    center_b: np.ndarray,
    heading_b: np.ndarray,
    length_b: np.ndarray | float,
    width_b: np.ndarray | float,
) -> np.ndarray:
    """Whether oriented boxes A and B overlap (separating-axis test; touching is no overlap).

    Centres are [..., 2], everything else broadcasts against [...]. Two rectangles are disjoint
    iff their projections onto one of the four edge normals are disjoint; the projection
    half-length of a box of half-extents (l, w) onto an axis at angle φ to its own is
    l·|cos φ| + w·|sin φ|.
    """
    d = np.asarray(center_b) - np.asarray(center_a)
    dx, dy = d[..., 0], d[..., 1]
    ca, sa = np.cos(heading_a), np.sin(heading_a)
    cb, sb = np.cos(heading_b), np.sin(heading_b)
    cos_rel = np.abs(ca * cb + sa * sb)
    sin_rel = np.abs(ca * sb - sa * cb)
    la, wa = 0.5 * np.asarray(length_a), 0.5 * np.asarray(width_a)
    lb, wb = 0.5 * np.asarray(length_b), 0.5 * np.asarray(width_b)
    return (
        (np.abs(dx * ca + dy * sa) < la + lb * cos_rel + wb * sin_rel)
        & (np.abs(-dx * sa + dy * ca) < wa + lb * sin_rel + wb * cos_rel)
        & (np.abs(dx * cb + dy * sb) < lb + la * cos_rel + wa * sin_rel)
        & (np.abs(-dx * sb + dy * cb) < wb + la * sin_rel + wa * cos_rel)
    )


def _contacts(
    roll: Rollout, tracks: AgentTracks, ahead: int = 0, margin: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Overlaps [N, A, 40] of the ego box, moved `ahead` steps at constant velocity, with the
    agents `ahead` steps later, and whether each counts against the ego (module docstring).

    Only pairs whose centres are closer than the sum of the boxes' half-diagonals go through
    the separating-axis test; the others cannot overlap.
    """
    now, later = slice(1, STEPS + 1), slice(1 + ahead, STEPS + 1 + ahead)
    heading = roll.heading[:, now]
    direction = np.stack([np.cos(heading), np.sin(heading)], axis=-1)  # [N, 40, 2]
    ego = roll.xy[:, now]
    if ahead:
        ego = ego + (ahead * DT) * roll.speed[:, now, None] * direction
    dx = tracks.xy[:, :, later, 0] - ego[:, None, :, 0]  # [N, A, 40]
    dy = tracks.xy[:, :, later, 1] - ego[:, None, :, 1]
    ego_length, ego_width = EGO_LENGTH + 2.0 * margin, EGO_WIDTH + 2.0 * margin
    reach = 0.5 * (np.hypot(ego_length, ego_width) + np.hypot(tracks.length, tracks.width))
    near = (dx * dx + dy * dy < reach[:, :, None] ** 2) & tracks.mask[:, :, None]
    n, a, t = np.nonzero(near)
    gap = np.stack([dx[n, a, t], dy[n, a, t]], axis=-1)
    hit = boxes_overlap(
        np.zeros(2),
        heading[n, t],
        ego_length,
        ego_width,
        gap,
        tracks.heading[n, a, t + 1 + ahead],
        tracks.length[n, a],
        tracks.width[n, a],
    )
    along = (gap * direction[n, t]).sum(axis=-1)
    behind = (along < -0.5 * EGO_LENGTH) & (tracks.speed[n, a, t + 1 + ahead] >= STOPPED_SPEED)
    moving = roll.speed[n, t + 1] >= STOPPED_SPEED
    overlap = np.zeros(near.shape, dtype=bool)
    fault = np.zeros(near.shape, dtype=bool)
    overlap[n, a, t] = hit
    fault[n, a, t] = hit & moving & ~behind
    return overlap, fault


# ---------------------------------------------------------------------------------------------
# sub-scores


def no_collision(roll: Rollout, tracks: AgentTracks) -> np.ndarray:
    """NC per scene: 0 (at-fault collision with a vehicle), ½ (only with static objects) or 1.

    Each agent's collision is judged at its first contact, as NAVSIM does (a car that runs into
    the ego from behind stays not-at-fault while it drives through the ego's box)."""
    overlap, fault = _contacts(roll, tracks)
    first = np.argmax(overlap, axis=2)[..., None]
    hit = np.take_along_axis(fault, first, axis=2)[..., 0]  # [N, A]
    vehicle = (hit & ~tracks.objects).any(axis=1)
    static = (hit & tracks.objects).any(axis=1)
    return np.where(vehicle, 0.0, np.where(static, 0.5, 1.0))


def any_overlap(roll: Rollout, tracks: AgentTracks, margin: float = 0.0) -> np.ndarray:
    """Whether the ego box, grown by `margin` on every side, touches any agent at any state,
    whoever is at fault (the scene generator's test for its experts)."""
    overlap, _ = _contacts(roll, tracks, margin=margin)
    return overlap.any(axis=(1, 2))


def time_to_collision_ok(roll: Rollout, tracks: AgentTracks) -> np.ndarray:
    """TTC per scene: 1 unless a constant-velocity projection ≤ 0.9 s ahead hits an agent the
    ego is not already in contact with (at fault or not) somewhere in the horizon."""
    overlap, _ = _contacts(roll, tracks)
    collided = overlap.any(axis=2)  # [N, A]
    fails = np.zeros(len(roll.xy), dtype=bool)
    for ahead in TTC_STEPS[1:]:
        _, projected = _contacts(roll, tracks, ahead=ahead)
        fails |= (projected.any(axis=2) & ~collided).any(axis=1)
    return np.where(fails, 0.0, 1.0)


def ego_corners(roll: Rollout) -> np.ndarray:
    """The ego box's four corners [N, 40, 4, 2] at t = 0.1 … 4 s."""
    c, s = np.cos(roll.heading[:, 1:]), np.sin(roll.heading[:, 1:])
    half_l, half_w = 0.5 * EGO_LENGTH, 0.5 * EGO_WIDTH
    x, y = roll.xy[:, 1:, 0], roll.xy[:, 1:, 1]
    corners = np.empty((*c.shape, 4, 2))
    for i, (sl, sw) in enumerate(((1, 1), (1, -1), (-1, -1), (-1, 1))):
        corners[:, :, i, 0] = x + sl * half_l * c - sw * half_w * s
        corners[:, :, i, 1] = y + sl * half_l * s + sw * half_w * c
    return corners


def drivable_area(roll: Rollout, road: np.ndarray) -> np.ndarray:
    """DAC per scene: 0 if an ego corner leaves the road (|e| > w) at any state."""
    _, e = road_frame(ego_corners(roll), road)
    off = np.abs(e) > _per_scene(road[:, 0], e.ndim)
    return np.where(off.any(axis=(1, 2)), 0.0, 1.0)


def comfort_signals(roll: Rollout) -> dict[str, np.ndarray]:
    """The filtered comfort signals [N, 41]: lon/lat acceleration, jerks, yaw rate and accel."""
    c, s = np.cos(roll.heading), np.sin(roll.heading)
    lon = roll.acc[..., 0] * c + roll.acc[..., 1] * s
    lat = -roll.acc[..., 0] * s + roll.acc[..., 1] * c
    lon = _savgol(lon, 7, 2)
    lat = _savgol(lat, 7, 2)
    yaw = np.unwrap(roll.heading, axis=-1)
    return {
        "lon_accel": lon,
        "lat_accel": lat,
        "lon_jerk": _savgol(lon, 15, 2, deriv=1),
        "mag_jerk": _savgol(np.hypot(lon, lat), 15, 2, deriv=1),
        "yaw_rate": _savgol(yaw, 5, 2, deriv=1),
        "yaw_accel": _savgol(yaw, 5, 3, deriv=2),
    }


def comfortable(roll: Rollout) -> np.ndarray:
    """C per scene: 1 if every nuPlan comfort bound holds at every state."""
    sig = comfort_signals(roll)
    ok = (sig["lon_accel"] > COMFORT["min_lon_accel"]) & (
        sig["lon_accel"] < COMFORT["max_lon_accel"]
    )
    ok &= np.abs(sig["lat_accel"]) < COMFORT["max_abs_lat_accel"]
    ok &= np.abs(sig["lon_jerk"]) < COMFORT["max_abs_lon_jerk"]
    ok &= np.abs(sig["mag_jerk"]) < COMFORT["max_abs_mag_jerk"]
    ok &= np.abs(sig["yaw_rate"]) < COMFORT["max_abs_yaw_rate"]
    ok &= np.abs(sig["yaw_accel"]) < COMFORT["max_abs_yaw_accel"]
    return np.where(ok.all(axis=1), 1.0, 0.0)


def progress(roll: Rollout, road: np.ndarray) -> np.ndarray:
    """Arc length along the road centreline covered by the plan by t = 4 s (≥ 0)."""
    s, _ = road_frame(roll.xy[:, -1], road)
    return np.maximum(s, 0.0)


# ---------------------------------------------------------------------------------------------
# the reference lattice and EP


def quintic(u: np.ndarray) -> np.ndarray:
    """The minimum-jerk (smooth) step 10u³ − 15u⁴ + 6u⁵ on u clipped to [0, 1]: the lateral
    profile of lane changes, for the lattice here and the experts (scenes)."""
    u = np.clip(u, 0.0, 1.0)
    return u**3 * (10.0 - 15.0 * u + 6.0 * u * u)


def lattice_plans(ego_speed: np.ndarray, road: np.ndarray) -> np.ndarray:
    """The 65 reference plans per scene [N, 65, 8, 2] (module docstring: 5 shifts × 13 speeds)."""
    t = np.arange(1, N_WAYPOINTS + 1) * (WAYPOINT_STRIDE * DT)  # [8]
    offset = road[:, 3]
    v0 = ego_speed / np.maximum(1.0 - road[:, 1] * offset, 0.5)  # centreline speed
    targets = v0[:, None] * np.linspace(0.0, 1.0, LATTICE_SPEEDS)[None, :]  # [N, 13]
    brake = (v0[:, None] - targets) / LATTICE_BRAKE  # time to reach the target speed
    tb = np.minimum(t[None, None, :], brake[..., None])  # [N, 13, 8]
    s = (
        v0[:, None, None] * tb
        - 0.5 * LATTICE_BRAKE * tb**2
        + targets[..., None] * (t[None, None, :] - tb)
    )
    shifts = np.asarray(LATTICE_SHIFTS)
    lateral = shifts[None, :, None] * quintic(t / LATTICE_SHIFT_TIME)[None, None, :]
    e = offset[:, None, None] + lateral  # [N, 5, 8]
    e = np.broadcast_to(e[:, :, None, :], (len(road), len(shifts), LATTICE_SPEEDS, N_WAYPOINTS))
    s = np.broadcast_to(s[:, None], e.shape)
    xy, _ = road_to_ego(s, e, road)
    return xy.reshape(len(road), len(shifts) * LATTICE_SPEEDS, N_WAYPOINTS, 2)


def reference_progress(
    ego_speed: np.ndarray,
    road: np.ndarray,
    agents: np.ndarray,
    agents_future: np.ndarray,
    objects: np.ndarray | None = None,
) -> np.ndarray:
    """Largest progress [N] among the lattice plans with NC = 1 and DAC = 1 (0 if none)."""
    ego_speed, road, agents, agents_future = _check_scene_arrays(
        len(road), ego_speed, road, agents, agents_future
    )
    lattice = lattice_plans(ego_speed, road)
    tracks = agent_tracks(agents, agents_future, road, objects)
    best = np.zeros(len(road))
    for j in range(lattice.shape[1]):
        roll = densify(lattice[:, j], ego_speed)
        safe = (no_collision(roll, tracks) == 1.0) & (drivable_area(roll, road) == 1.0)
        best = np.where(safe, np.maximum(best, progress(roll, road)), best)
    return best


def ego_progress(plan_progress: np.ndarray, ref_progress: np.ndarray) -> np.ndarray:
    """EP: progress / reference progress clipped to [0, 1]; 1 where the reference is < 5 m."""
    ratio = plan_progress / np.maximum(ref_progress, EP_MIN_PROGRESS)
    return np.where(ref_progress < EP_MIN_PROGRESS, 1.0, np.clip(ratio, 0.0, 1.0))


# ---------------------------------------------------------------------------------------------
# the score


@dataclass(frozen=True)
class PDMResult:
    """Per-scene sub-scores, PDMS and raw progress (all [N])."""

    nc: np.ndarray
    dac: np.ndarray
    ttc: np.ndarray
    ep: np.ndarray
    comfort: np.ndarray
    score: np.ndarray
    progress: np.ndarray

    def columns(self) -> dict[str, np.ndarray]:
        """The per-scene table columns: NC, DAC, TTC, EP, C, score."""
        return {
            "NC": self.nc,
            "DAC": self.dac,
            "TTC": self.ttc,
            "EP": self.ep,
            "C": self.comfort,
            "score": self.score,
        }


def pdm_score(
    plans: np.ndarray,
    ego_speed: np.ndarray,
    road: np.ndarray,
    agents: np.ndarray,
    agents_future: np.ndarray,
    ref_progress: np.ndarray,
    objects: np.ndarray | None = None,
) -> PDMResult:
    """The synthetic PDMS of plans [N, 8, 2], one per scene (`reference_progress` gives
    ref_progress; compute it once per scene set and reuse it for every method)."""
    plans = _check_plans(plans)
    ego_speed, road, agents, agents_future = _check_scene_arrays(
        len(plans), ego_speed, road, agents, agents_future
    )
    ref_progress = np.asarray(ref_progress, dtype=float)
    if ref_progress.shape != (len(plans),):
        raise ValueError(f"ref_progress: expected shape [{len(plans)}], got {ref_progress.shape}")
    roll = densify(plans, ego_speed)
    tracks = agent_tracks(agents, agents_future, road, objects)
    nc = no_collision(roll, tracks)
    dac = drivable_area(roll, road)
    ttc = time_to_collision_ok(roll, tracks)
    done = progress(roll, road)
    ep = ego_progress(done, ref_progress)
    comfort = comfortable(roll)
    score = nc * dac * (5.0 * ttc + 5.0 * ep + 2.0 * comfort) / 12.0
    return PDMResult(nc=nc, dac=dac, ttc=ttc, ep=ep, comfort=comfort, score=score, progress=done)


def scene_reference_progress(scenes: Scenes) -> np.ndarray:
    """`reference_progress` of a `Scenes` set."""
    return reference_progress(scenes.ego_speed, scenes.road, scenes.agents, scenes.agents_future)


def score_scenes(
    plans: np.ndarray, scenes: Scenes, ref_progress: np.ndarray | None = None
) -> PDMResult:
    """`pdm_score` of one plan per scene of `scenes` (the reference is computed if not given)."""
    if ref_progress is None:
        ref_progress = scene_reference_progress(scenes)
    return pdm_score(
        plans, scenes.ego_speed, scenes.road, scenes.agents, scenes.agents_future, ref_progress
    )


def collisions(
    plans: np.ndarray,
    ego_speed: np.ndarray,
    road: np.ndarray,
    agents: np.ndarray,
    agents_future: np.ndarray,
) -> np.ndarray:
    """Whether each plan has an at-fault collision (NC < 1), bool [N]."""
    plans = _check_plans(plans)
    ego_speed, road, agents, agents_future = _check_scene_arrays(
        len(plans), ego_speed, road, agents, agents_future
    )
    roll = densify(plans, ego_speed)
    return no_collision(roll, agent_tracks(agents, agents_future, road)) < 1.0


def ade(plans: np.ndarray, expert: np.ndarray) -> np.ndarray:
    """Average displacement error [N] of plans [N, 8, 2] against the expert [N, 8, 2]."""
    plans, expert = _check_plans(plans), _check_plans(expert, "expert")
    if plans.shape != expert.shape:
        raise ValueError(f"expert: shape {expert.shape} differs from plans' {plans.shape}")
    return np.linalg.norm(plans - expert, axis=-1).mean(axis=-1)


def min_ade(samples: np.ndarray, expert: np.ndarray) -> np.ndarray:
    """minADE [N] over K sampled plans [N, K, 8, 2] against the expert [N, 8, 2]."""
    samples = np.asarray(samples, dtype=float)
    expert = _check_plans(expert, "expert")
    if samples.ndim != 4 or samples.shape[2:] != (N_WAYPOINTS, 2) or len(samples) != len(expert):
        raise ValueError(
            f"samples: expected shape [{len(expert)}, K, {N_WAYPOINTS}, 2], got {samples.shape}"
        )
    if samples.shape[1] == 0:
        raise ValueError("samples: need at least one sample per scene (K >= 1)")
    return np.linalg.norm(samples - expert[:, None], axis=-1).mean(axis=-1).min(axis=1)
