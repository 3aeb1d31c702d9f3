"""bidrive's synthetic driving scenes: a seeded numpy generator of roads, scripted agents and
multimodal expert plans (the card's smoke data, section 4).

World. A straight or gently curved road (constant curvature |κ| ≤ `max_curvature`, curved in a
`curved_fraction` of scenes) with 2 or 3 lanes of 3.5 m; the ego drives at the centre of one
lane at speed v₀ ~ U(`speed_range`), heading along the road. Everything is built in road
coordinates (s along the centreline, e to the left of it) and mapped to the ego frame with
`pdms.road_to_ego`, so agents and experts follow the curve. Agents are cars (length U(4.2, 5.2) m,
width U(1.8, 2.1) m) that move at constant speed along s, scripted over 4 s at 10 Hz and blind
to the ego (non-reactive, as in NAVSIM). At most one agent per lane besides the scene's key
agent, so agents never collide with each other.

Scenario mix (`mix`, default 30 / 40 / 30 %):
* free road: 0–3 other cars (each lane filled with probability `other_agent_rate`; one in the ego
  lane is 35–60 m ahead and not slower than the ego). The driving command is "left" (20 %, if a
  left lane exists), "right" (20 %, if a right lane exists) or "straight". Left / right gives a
  lane change; straight gives one of three speed modes: cruise (weight ½, target v₀), speed up
  (¼, 1.3·v₀), slow down (¼, 0.6·v₀).
* lead: a car in the ego lane, stopped (60 %) or slow (0.1–0.4·v₀), which the ego would reach
  bumper to bumper after 2.8–3.5 s at constant speed; other cars in the other lanes. Expert
  modes overtake-left / overtake-right / follow with weights ⅜ / ⅜ / ¼, renormalised over the
  modes whose lane exists (so 0.6 / 0.4 with one adjacent lane). A `lead_middle_lane` share
  of these scenes (default ½) puts the ego in the middle lane of a 3-lane road, so both
  overtakes exist (with lanes drawn uniformly only 1 in 6 would). The command is "straight":
  nothing in the context says which side, which is the multimodality MLP-L2 averages away
  (the mean of the two overtakes drives into the obstacle).
* cut-in: a car in an adjacent lane, 10–22 m ahead (centre to centre) at 0.6–0.9·v₀, changes
  into the ego lane starting at 0.3–1.5 s over 2–3 s; constant velocity runs into it in
  about 40 % of these scenes. Modes yield (weight 0.6, follow it) and, when a lane exists on
  the other side, evade (0.4, change lane away from it). Command "straight".

Experts (a planner that sees the agents' futures). Lateral: a quintic (minimum-jerk) move to the
target lane centre, start U(0.5, 1.5) s and duration U(2.5, 3.5) s for commanded changes;
U(2.5, 3.0) s for overtakes, whose start is brought forward (to ≥ 0 s) when needed to clear the
obstacle 0.9 s before reaching it; start U(0, 0.8) s and duration U(2.5, 3.0) s for
evasions. Longitudinal: an IDM-like
car-following model integrated at 10 Hz with per-mode random parameters: target speed v₀ times
the mode factor times U(0.85, 1.15) (the card's ±15 %), maximum acceleration U(1.2, 2.0) m/s²,
time headway U(1.0, 1.5) s, standstill gap U(2.0, 3.5) m; above the target speed it eases off
at most 1.5 m/s² (Treiber's improved-IDM free term) instead of IDM's hard brake; acceleration
is clipped to [−3.8, 2.0] m/s² and its rate to ±2 m/s³. The leader is the nearest agent ahead
among those that come within the target lane's corridor at any time in the horizon (so the
expert anticipates a cut-in), and an overtaking expert ignores the obstacle it passes.

Every mode of a scene is built; a mode is valid only if its 8-waypoint plan, scored like any
plan by `pdms`, has no overlap with any agent even with the ego box grown by 0.5 m on every side
(whoever would be at fault), stays on the road (DAC = 1), keeps TTC = 1 and is comfortable
(C = 1). The expert is drawn among the valid modes by their weights; a scene without a valid
mode (about 2 % of free-road scenes, under 1 % of lead scenes, 6 % of cut-ins) is drawn again,
keeping its kind (drawn for all n scenes first, so the mix holds) and using the same
generator, up to `max_rounds` rounds; a fixed seed gives identical arrays. The validity
filter shapes the mode frequencies beyond their weights (a follow that cannot stop comfortably
is not offered). All modes' plans are kept (`mode_plans`, `mode_ids`, `mode_valid`) for
mode-level analyses.

The context vector (CONTEXT_FIELDS, 36 numbers in SI units; standardise them in the encoder) is
ego speed, the command one-hot, the road (half-width, curvature, lane count and the ego's offset
from the road centre: the card's descriptor plus the offset, without which lane availability
and the road edges are unknown) and the 4 agent slots (x, y, vx, vy, length, width, mask) in the
ego frame at t = 0, sorted by distance, empty slots all zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from reprolab.studies.bidrive import pdms
from reprolab.studies.bidrive.pdms import (
    DT,
    EGO_LENGTH,
    EGO_WIDTH,
    LANE_WIDTH,
    N_WAYPOINTS,
    STEPS,
    WAYPOINT_STRIDE,
    quintic,
)

KINDS = ("free", "lead", "cut_in")
COMMANDS = ("left", "straight", "right")
MODES = (
    "cruise",
    "speed_up",
    "slow_down",
    "change_left",
    "change_right",
    "overtake_left",
    "overtake_right",
    "follow",
    "yield",
    "evade_left",
    "evade_right",
)
MODE_WEIGHT = np.array([0.5, 0.25, 0.25, 1.0, 1.0, 0.375, 0.375, 0.25, 0.6, 0.4, 0.4])
MODE_SHIFT = np.array([0, 0, 0, 1, -1, 1, -1, 0, 0, 1, -1]) * LANE_WIDTH
MODE_SPEED = np.array([1.0, 1.3, 0.6, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
MAX_AGENTS = 4
N_CANDIDATES = 3
AGENT_FEATURES = ("x", "y", "vx", "vy", "length", "width", "mask")
CONTEXT_FIELDS = (
    "ego_speed",
    "cmd_left",
    "cmd_straight",
    "cmd_right",
    "half_width",
    "curvature",
    "lanes",
    "ego_offset",
) + tuple(f"agent{i}_{f}" for i in range(MAX_AGENTS) for f in AGENT_FEATURES)
CONTEXT_DIM = len(CONTEXT_FIELDS)

CUT_IN_DISTANCE = (10.0, 22.0)  # m, centre to centre, ahead of the ego
CUT_IN_SPEED = (0.6, 0.9)  # times v₀
VALIDITY_MARGIN = 0.5  # m added on every side of the ego box when checking experts
CORRIDOR_MARGIN = 0.3  # m: lateral slack of the target-lane corridor for leader selection
IDM_COMFORT_DECEL = 1.5  # m/s², easing off above the target speed
IDM_BRAKE = 3.8  # m/s², hardest expert braking
IDM_ACCEL = 2.0  # m/s², hardest expert acceleration
IDM_JERK = 2.0  # m/s³, acceleration rate limit (3 lets a fifth of braking experts fail C)
IDM_DELTA = 4.0
IDM_B = 2.5  # m/s², IDM's comfortable deceleration in the desired gap

_M = {name: i for i, name in enumerate(MODES)}


@dataclass(frozen=True)
class Scenes:
    """A set of N scenes as arrays (ego frame at t = 0; see the module docstring)."""

    ctx: np.ndarray  # [N, 36] float: context vector (CONTEXT_FIELDS)
    ego_speed: np.ndarray  # [N] float: v₀ (m/s)
    command: np.ndarray  # [N] int8: index into COMMANDS
    road: np.ndarray  # [N, 4] float: half-width, curvature, lanes, ego offset
    agents: np.ndarray  # [N, 4, 7] float: AGENT_FEATURES at t = 0
    agents_future: np.ndarray  # [N, 4, 40, 2] float: positions at t = 0.1 … 4 s
    expert: np.ndarray  # [N, 8, 2] float: the expert plan, waypoints at 0.5 … 4 s
    mode: np.ndarray  # [N] int8: the expert's index into MODES
    kind: np.ndarray  # [N] int8: index into KINDS
    mode_plans: np.ndarray  # [N, 3, 8, 2] float: every candidate mode's plan
    mode_ids: np.ndarray  # [N, 3] int8: their MODES indices, -1 for an empty slot
    mode_valid: np.ndarray  # [N, 3] bool: which candidates passed the expert checks

    def __len__(self) -> int:
        return len(self.ego_speed)

    def subset(self, index: np.ndarray | slice) -> Scenes:
        """The scenes at `index` (an index array, a boolean mask or a slice)."""
        return Scenes(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


# ---------------------------------------------------------------------------------------------
# argument checks


def _check_args(
    n: int,
    seed: int,
    mix: Sequence[float],
    lanes: Sequence[int],
    max_curvature: float,
    curved_fraction: float,
    speed_range: Sequence[float],
    other_agent_rate: float,
    lead_middle_lane: float,
    max_rounds: int,
) -> None:
    """Raise ValueError naming the first bad argument of `generate_scenes`."""

    def integer(value: object) -> bool:
        return isinstance(value, int | np.integer) and not isinstance(value, bool)

    if not integer(n) or n < 1:
        raise ValueError(f"n: need a positive integer number of scenes, got {n!r}")
    if not integer(seed) or seed < 0:
        raise ValueError(f"seed: need a non-negative integer, got {seed!r}")
    mix_a = np.asarray(mix, dtype=float)
    if mix_a.shape != (3,) or not np.isfinite(mix_a).all() or (mix_a < 0).any():
        raise ValueError(f"mix: need three non-negative fractions (free, lead, cut_in), got {mix}")
    if abs(mix_a.sum() - 1.0) > 1e-6:
        raise ValueError(f"mix: fractions must sum to 1, got {mix} (sum {mix_a.sum():g})")
    if len(lanes) == 0 or any(not integer(k) or k not in (2, 3) for k in lanes):
        raise ValueError(f"lanes: need lane counts from {{2, 3}}, got {lanes}")
    if not 0.0 <= max_curvature <= 0.01:
        raise ValueError(f"max_curvature: need 0 <= max_curvature <= 0.01 1/m, got {max_curvature}")
    if not 0.0 <= curved_fraction <= 1.0:
        raise ValueError(f"curved_fraction: need a fraction in [0, 1], got {curved_fraction}")
    if len(speed_range) != 2 or not 5.0 <= speed_range[0] <= speed_range[1] <= 25.0:
        raise ValueError(
            f"speed_range: need (low, high) with 5 <= low <= high <= 25 m/s, got {speed_range}"
        )
    if not 0.0 <= other_agent_rate <= 1.0:
        raise ValueError(f"other_agent_rate: need a fraction in [0, 1], got {other_agent_rate}")
    if not 0.0 <= lead_middle_lane <= 1.0:
        raise ValueError(f"lead_middle_lane: need a fraction in [0, 1], got {lead_middle_lane}")
    if not integer(max_rounds) or max_rounds < 1:
        raise ValueError(f"max_rounds: need a positive integer, got {max_rounds!r}")


# ---------------------------------------------------------------------------------------------
# drawing scenes in road coordinates


@dataclass
class _Draft:
    """m scenes in road coordinates, before their experts are checked."""

    kind: np.ndarray  # [m]
    command: np.ndarray  # [m]
    road: np.ndarray  # [m, 4]
    v0: np.ndarray  # [m]
    t_hit: np.ndarray  # [m]: lead scenes' time to reach the lead at constant speed
    # agents [m, 4]: slot 0 is the scene's key agent, slots 1..3 one per lane (right to left)
    a_s0: np.ndarray
    a_v: np.ndarray
    a_from: np.ndarray
    a_to: np.ndarray
    a_start: np.ndarray
    a_dur: np.ndarray
    a_len: np.ndarray
    a_wid: np.ndarray
    a_mask: np.ndarray
    cand: np.ndarray  # [m, 3] MODES indices, -1 empty


def _quintic_rate(u: np.ndarray) -> np.ndarray:
    """d/du of `pdms.quintic` (0 outside [0, 1])."""
    inside = (u > 0.0) & (u < 1.0)
    return np.where(inside, 30.0 * u * u * (1.0 - u) ** 2, 0.0)


def _draw(
    rng: np.random.Generator,
    kind: np.ndarray,
    lanes: np.ndarray,
    max_curvature: float,
    curved_fraction: float,
    speed_range: Sequence[float],
    other_agent_rate: float,
    lead_middle_lane: float,
) -> _Draft:
    """Draw one scene of each `kind` (all random numbers are drawn for every scene, whatever
    its kind, in a fixed order)."""
    m = len(kind)
    n_lanes = rng.choice(lanes, size=m).astype(float)
    curved = rng.random(m) < curved_fraction
    kappa = np.where(curved, rng.uniform(-max_curvature, max_curvature, m), 0.0)
    ego_lane = np.minimum(np.floor(rng.random(m) * n_lanes), n_lanes - 1)
    middle = (kind == 1) & (rng.random(m) < lead_middle_lane)
    n_lanes = np.where(middle, 3.0, n_lanes)
    ego_lane = np.where(middle, 1.0, ego_lane)
    half = 0.5 * LANE_WIDTH * n_lanes
    offset = -half + LANE_WIDTH * (ego_lane + 0.5)
    v0 = rng.uniform(speed_range[0], speed_range[1], m)
    has_left, has_right = ego_lane < n_lanes - 1, ego_lane > 0
    free, lead, cut = kind == 0, kind == 1, kind == 2

    a_len = rng.uniform(4.2, 5.2, (m, MAX_AGENTS))
    a_wid = rng.uniform(1.8, 2.1, (m, MAX_AGENTS))
    a_s0 = np.zeros((m, MAX_AGENTS))
    a_v = np.zeros((m, MAX_AGENTS))
    a_from = np.zeros((m, MAX_AGENTS))
    a_start = np.zeros((m, MAX_AGENTS))
    a_dur = np.ones((m, MAX_AGENTS))
    a_mask = np.zeros((m, MAX_AGENTS), dtype=bool)

    # the key agent: a stopped or slow lead, or a car cutting in from an adjacent lane
    stopped = rng.random(m) < 0.6
    lead_speed = np.where(stopped, 0.0, v0 * rng.uniform(0.1, 0.4, m))
    t_hit = rng.uniform(2.8, 3.5, m)
    lead_s0 = (v0 - lead_speed) * t_hit + 0.5 * (EGO_LENGTH + a_len[:, 0])
    side = np.where(has_left & has_right, np.where(rng.random(m) < 0.5, 1.0, -1.0), 0.0)
    side = np.where(side == 0.0, np.where(has_left, 1.0, -1.0), side)
    cut_s0 = rng.uniform(*CUT_IN_DISTANCE, m)
    cut_speed = v0 * rng.uniform(*CUT_IN_SPEED, m)
    cut_start = rng.uniform(0.3, 1.5, m)
    cut_dur = rng.uniform(2.0, 3.0, m)
    a_s0[:, 0] = np.where(lead, lead_s0, cut_s0)
    a_v[:, 0] = np.where(lead, lead_speed, cut_speed)
    a_from[:, 0] = np.where(cut, offset + side * LANE_WIDTH, offset)
    a_start[:, 0] = np.where(cut, cut_start, 0.0)
    a_dur[:, 0] = np.where(cut, cut_dur, 1.0)
    a_mask[:, 0] = ~free
    a_to = a_from.copy()
    a_to[:, 0] = offset

    # other cars, at most one per lane, never in a lane the key agent uses
    source_lane = ego_lane + side
    for lane in range(3):
        slot = lane + 1
        in_ego_lane = ego_lane == lane
        reserved = (lead & in_ego_lane) | (cut & (in_ego_lane | (source_lane == lane)))
        present = (lane < n_lanes) & ~reserved & (rng.random(m) < other_agent_rate)
        near_s0 = rng.uniform(-25.0, 50.0, m)
        far_s0 = rng.uniform(35.0, 60.0, m)
        near_v = v0 * rng.uniform(0.7, 1.2, m)
        far_v = v0 * rng.uniform(1.0, 1.2, m)
        a_s0[:, slot] = np.where(in_ego_lane, far_s0, near_s0)
        a_v[:, slot] = np.where(in_ego_lane, far_v, near_v)
        a_from[:, slot] = a_to[:, slot] = -half + LANE_WIDTH * (lane + 0.5)
        a_mask[:, slot] = present

    # the command and the candidate modes
    u = rng.random(m)
    command = np.full(m, 1)
    command = np.where(free & has_left & (u < 0.2), 0, command)
    command = np.where(free & has_right & (u >= 0.2) & (u < 0.4), 2, command)
    cand = np.full((m, N_CANDIDATES), -1)
    straight_free = free & (command == 1)
    cand[straight_free] = [_M["cruise"], _M["speed_up"], _M["slow_down"]]
    cand[free & (command == 0), 0] = _M["change_left"]
    cand[free & (command == 2), 0] = _M["change_right"]
    cand[lead & has_left, 0] = _M["overtake_left"]
    cand[lead & has_right, 1] = _M["overtake_right"]
    cand[lead, 2] = _M["follow"]
    cand[cut, 0] = _M["yield"]
    cand[cut & (side < 0) & has_left, 1] = _M["evade_left"]
    cand[cut & (side > 0) & has_right, 2] = _M["evade_right"]

    road = np.stack([half, kappa, n_lanes, offset], axis=1)
    return _Draft(
        kind=kind,
        command=command,
        road=road,
        v0=v0,
        t_hit=t_hit,
        a_s0=a_s0,
        a_v=a_v,
        a_from=a_from,
        a_to=a_to,
        a_start=a_start,
        a_dur=a_dur,
        a_len=a_len,
        a_wid=a_wid,
        a_mask=a_mask,
        cand=cand,
    )


def _agent_road_tracks(d: _Draft, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Agents' road coordinates s, e [m, 4, len(t)] at times t."""
    s = d.a_s0[..., None] + d.a_v[..., None] * t
    u = (t - d.a_start[..., None]) / d.a_dur[..., None]
    e = d.a_from[..., None] + (d.a_to - d.a_from)[..., None] * quintic(u)
    return s, e


def _agents_ego_frame(d: _Draft) -> tuple[np.ndarray, np.ndarray]:
    """agents [m, 4, 7] at t = 0 and agents_future [m, 4, 40, 2] in the ego frame."""
    m = len(d.v0)
    t = np.arange(STEPS + 1) * DT
    s, e = _agent_road_tracks(d, t)
    xy, _ = pdms.road_to_ego(s.reshape(m, -1), e.reshape(m, -1), d.road)
    xy = xy.reshape(m, MAX_AGENTS, STEPS + 1, 2)
    kappa = d.road[:, 1:2]
    angle = kappa * d.a_s0
    e_rate = (d.a_to - d.a_from) * _quintic_rate(-d.a_start / d.a_dur) / d.a_dur
    s_rate = d.a_v * (1.0 - kappa * e[:, :, 0])
    vx = s_rate * np.cos(angle) - e_rate * np.sin(angle)
    vy = s_rate * np.sin(angle) + e_rate * np.cos(angle)
    agents = np.stack(
        [xy[:, :, 0, 0], xy[:, :, 0, 1], vx, vy, d.a_len, d.a_wid, np.ones_like(vx)], axis=-1
    )
    agents *= d.a_mask[..., None]
    future = xy[:, :, 1:] * d.a_mask[..., None, None]
    return agents, future


# ---------------------------------------------------------------------------------------------
# experts


def _mode_parameters(rng: np.random.Generator, d: _Draft) -> dict[str, np.ndarray]:
    """Per-candidate random parameters [m, 3] (module docstring)."""
    shape = d.cand.shape
    u_start, u_dur = rng.random(shape), rng.random(shape)
    speed_noise = rng.uniform(0.85, 1.15, shape)
    a_max = rng.uniform(1.2, 2.0, shape)
    headway = rng.uniform(1.0, 1.5, shape)
    gap0 = rng.uniform(2.0, 3.5, shape)
    mode = np.maximum(d.cand, 0)
    overtake = (d.cand == _M["overtake_left"]) | (d.cand == _M["overtake_right"])
    evade = (d.cand == _M["evade_left"]) | (d.cand == _M["evade_right"])
    duration = np.where(overtake | evade, 2.5 + 0.5 * u_dur, 2.5 + u_dur)
    start = np.where(evade, 0.8 * u_start, 0.5 + u_start)
    latest = np.maximum(d.t_hit[:, None] - 0.9 - 0.65 * duration, 0.0)
    start = np.where(overtake, np.minimum(start, latest), start)
    return {
        "target_e": d.road[:, 3:4] + MODE_SHIFT[mode],
        "start": start,
        "duration": duration,
        "target_v": np.maximum(d.v0[:, None] * MODE_SPEED[mode] * speed_noise, 1.0),
        "a_max": a_max,
        "headway": headway,
        "gap0": gap0,
    }


def _leaders(d: _Draft, target_e: np.ndarray) -> np.ndarray:
    """Which agents [m, 3, 4] a candidate follows: ahead at t = 0 and, at some time in the
    horizon, inside the corridor of the candidate's target lane."""
    _, e = _agent_road_tracks(d, np.arange(STEPS + 1) * DT)  # [m, 4, 41]
    reach = 0.5 * (EGO_WIDTH + d.a_wid) + CORRIDOR_MARGIN  # [m, 4]
    inside = np.abs(e[:, None] - target_e[:, :, None, None]) < reach[:, None, :, None]
    return inside.any(axis=-1) & (d.a_mask & (d.a_s0 > 0.0))[:, None, :]


def _longitudinal(d: _Draft, p: dict[str, np.ndarray]) -> np.ndarray:
    """Centreline arc length s [m, 3, 41] of each candidate from the IDM-like model."""
    m = len(d.v0)
    lead = _leaders(d, p["target_e"])
    v = np.repeat((d.v0 / np.maximum(1.0 - d.road[:, 1] * d.road[:, 3], 0.5))[:, None], 3, 1)
    s = np.zeros((m, N_CANDIDATES))
    acc = np.zeros((m, N_CANDIDATES))
    track = [s.copy()]
    reach = 0.5 * (EGO_LENGTH + d.a_len)[:, None, :]  # centre-to-bumper distances [m, 1, 4]
    for k in range(STEPS):
        other_s = (d.a_s0 + d.a_v * (k * DT))[:, None, :]  # [m, 1, 4]
        gap = other_s - s[..., None] - reach
        ahead = lead & (other_s > s[..., None])
        gap = np.where(ahead, gap, np.inf)
        j = np.argmin(gap, axis=-1)[..., None]
        nearest = np.take_along_axis(gap, j, axis=-1)[..., 0]
        closing = (
            v - np.take_along_axis(np.broadcast_to(d.a_v[:, None, :], gap.shape), j, -1)[..., 0]
        )
        has = np.isfinite(nearest)
        desired = p["gap0"] + np.maximum(
            0.0, v * p["headway"] + v * closing / (2.0 * np.sqrt(p["a_max"] * IDM_B))
        )
        interaction = np.where(has, (desired / np.maximum(nearest, 0.1)) ** 2, 0.0)
        ratio = np.maximum(v / p["target_v"], 1e-6)
        free = np.where(
            ratio <= 1.0,
            p["a_max"] * (1.0 - ratio**IDM_DELTA),
            -IDM_COMFORT_DECEL * (1.0 - ratio ** (-IDM_DELTA)),
        )
        want = np.clip(free - p["a_max"] * interaction, -IDM_BRAKE, IDM_ACCEL)
        acc = np.clip(want, acc - IDM_JERK * DT, acc + IDM_JERK * DT)
        v_next = np.maximum(v + acc * DT, 0.0)
        s = s + 0.5 * (v + v_next) * DT
        v = v_next
        track.append(s.copy())
    return np.stack(track, axis=-1)


def _candidate_plans(d: _Draft, p: dict[str, np.ndarray]) -> np.ndarray:
    """Every candidate's plan [m, 3, 8, 2] in the ego frame."""
    m = len(d.v0)
    t = np.arange(STEPS + 1) * DT
    s = _longitudinal(d, p)
    u = (t[None, None, :] - p["start"][..., None]) / p["duration"][..., None]
    e0 = d.road[:, 3][:, None, None]
    e = e0 + (p["target_e"][..., None] - e0) * quintic(u)
    xy, _ = pdms.road_to_ego(s.reshape(m, -1), e.reshape(m, -1), d.road)
    xy = xy.reshape(m, N_CANDIDATES, STEPS + 1, 2)
    return xy[:, :, WAYPOINT_STRIDE::WAYPOINT_STRIDE][:, :, :N_WAYPOINTS]


def _valid_modes(
    d: _Draft, plans: np.ndarray, agents: np.ndarray, future: np.ndarray
) -> np.ndarray:
    """[m, 3] whether each candidate passes the expert checks (module docstring)."""
    tracks = pdms.agent_tracks(agents, future, d.road)
    valid = d.cand >= 0
    for c in range(N_CANDIDATES):
        roll = pdms.densify(plans[:, c], d.v0)
        valid[:, c] &= ~pdms.any_overlap(roll, tracks, margin=VALIDITY_MARGIN)
        valid[:, c] &= pdms.drivable_area(roll, d.road) == 1.0
        valid[:, c] &= pdms.time_to_collision_ok(roll, tracks) == 1.0
        valid[:, c] &= pdms.comfortable(roll) == 1.0
    return valid


def _sort_agents(agents: np.ndarray, future: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Agents ordered by distance from the ego at t = 0, empty slots last."""
    distance = np.where(agents[..., 6] > 0.5, np.hypot(agents[..., 0], agents[..., 1]), np.inf)
    order = np.argsort(distance, axis=1, kind="stable")
    return (
        np.take_along_axis(agents, order[..., None], axis=1),
        np.take_along_axis(future, order[..., None, None], axis=1),
    )


def context_vector(
    ego_speed: np.ndarray, command: np.ndarray, road: np.ndarray, agents: np.ndarray
) -> np.ndarray:
    """The context vectors [N, 36] (CONTEXT_FIELDS) of scenes given as arrays."""
    onehot = np.eye(len(COMMANDS))[command]
    return np.concatenate(
        [ego_speed[:, None], onehot, road, agents.reshape(len(agents), -1)], axis=1
    )


def generate_scenes(
    n: int,
    seed: int,
    *,
    mix: Sequence[float] = (0.3, 0.4, 0.3),
    lanes: Sequence[int] = (2, 3),
    max_curvature: float = 0.003,
    curved_fraction: float = 0.5,
    speed_range: Sequence[float] = (6.0, 18.0),
    other_agent_rate: float = 0.4,
    lead_middle_lane: float = 0.5,
    max_rounds: int = 100,
) -> Scenes:
    """n scenes from np.random.default_rng(seed) (module docstring). The keyword defaults are
    the design card's smoke world; the study's jobs pass every value from params.yaml."""
    _check_args(
        n,
        seed,
        mix,
        lanes,
        max_curvature,
        curved_fraction,
        speed_range,
        other_agent_rate,
        lead_middle_lane,
        max_rounds,
    )
    rng = np.random.default_rng(seed)
    mix_a, lanes_a = np.asarray(mix, dtype=float), np.asarray(lanes)
    out: dict[str, np.ndarray] = {
        "ego_speed": np.zeros(n),
        "command": np.zeros(n, dtype=np.int8),
        "road": np.zeros((n, 4)),
        "agents": np.zeros((n, MAX_AGENTS, len(AGENT_FEATURES))),
        "agents_future": np.zeros((n, MAX_AGENTS, STEPS, 2)),
        "expert": np.zeros((n, N_WAYPOINTS, 2)),
        "mode": np.zeros(n, dtype=np.int8),
        "kind": np.zeros(n, dtype=np.int8),
        "mode_plans": np.zeros((n, N_CANDIDATES, N_WAYPOINTS, 2)),
        "mode_ids": np.zeros((n, N_CANDIDATES), dtype=np.int8),
        "mode_valid": np.zeros((n, N_CANDIDATES), dtype=bool),
    }
    kinds = rng.choice(len(KINDS), size=n, p=mix_a / mix_a.sum())
    pending = np.arange(n)
    for _ in range(max_rounds):
        m = len(pending)
        d = _draw(
            rng,
            kinds[pending],
            lanes_a,
            max_curvature,
            curved_fraction,
            speed_range,
            other_agent_rate,
            lead_middle_lane,
        )
        plans = _candidate_plans(d, _mode_parameters(rng, d))
        agents, future = _agents_ego_frame(d)
        valid = _valid_modes(d, plans, agents, future)
        weight = np.where(valid, MODE_WEIGHT[np.maximum(d.cand, 0)], 0.0)
        cumulative = np.cumsum(weight, axis=1)
        total = cumulative[:, -1]
        pick = rng.random(m) * total
        chosen = np.minimum((cumulative <= pick[:, None]).sum(axis=1), N_CANDIDATES - 1)
        ok = total > 0.0
        rows, dest = np.flatnonzero(ok), pending[ok]
        agents, future = _sort_agents(agents[rows], future[rows])
        out["ego_speed"][dest] = d.v0[rows]
        out["command"][dest] = d.command[rows]
        out["road"][dest] = d.road[rows]
        out["agents"][dest] = agents
        out["agents_future"][dest] = future
        out["expert"][dest] = plans[rows, chosen[rows]]
        out["mode"][dest] = d.cand[rows, chosen[rows]]
        out["kind"][dest] = d.kind[rows]
        out["mode_plans"][dest] = plans[rows]
        out["mode_ids"][dest] = d.cand[rows]
        out["mode_valid"][dest] = valid[rows]
        pending = pending[~ok]
        if len(pending) == 0:
            break
    else:
        raise RuntimeError(
            f"generate_scenes: {len(pending)} of {n} scenes had no valid expert mode after "
            f"max_rounds={max_rounds} draws"
        )
    ctx = context_vector(out["ego_speed"], out["command"], out["road"], out["agents"])
    return Scenes(ctx=ctx, **out)
