"""bidrive's test-time latent optimisation (card section 2): differentiable safety, drivable-area
and dynamics costs of plans in torch, and Adam on a flow student's latents under them.

J(z) = −λ_ℓ log q_S(G(z)) + λ_col Σ_{t,j} sp_β(r_safe − d_{t,j})
       + λ_da Σ_t sp_β(|e_t| − (w − ½ ego width))
       + λ_dyn Σ_t [dynamics excesses]², with sp_β(u) = softplus(βu)/β.
The card's defaults are λ = (λ_ℓ, λ_col, λ_da, λ_dyn) = (1, 10, 10, 1), r_safe = 1 m, β = 5
(`CostWeights`).

Rollout. `densify_torch` is `pdms.densify` in torch: the same clamped-start / not-a-knot cubic
spline through the origin and the 8 waypoints, applied through pdms's own precomputed (10 → 41)
operators (so the two cannot drift apart), the same held heading (the velocity direction, kept
at its last value while the speed is below 0.5 m/s; +x at t = 0). Derived signals: the
acceleration in the heading frame (longitudinal a_t and lateral κ_t v_t², which is what the
lateral acceleration of a path of curvature κ driven at speed v is), the longitudinal jerk as
the 10 Hz difference of a_t (exact for the spline: its acceleration is linear between
consecutive 10 Hz states, since the knots fall every 5 states) and the curvature κ_t.

Costs, all summed over the 40 states t = 0.1 … 4 s that pdms scores (the dynamics term also over
t = 0 and the jerk over the 40 intervals):
* collision: the ego box (5 × 2 m, pdms's) and each agent box are 3 disks each, of radius half
  the box width, centred on the box axis at 0 and ±(length − width)/2, so they are inscribed
  (they miss the corners by at most (√2 − 1)·width/2, 0.41 m for a 2 m wide box: the 1 m
  r_safe is more than both boxes' missing corners together). d_{t,j} is the smallest clearance
  (centre distance minus both radii) over the 9 disk pairs. Agents follow their scripted 10 Hz
  futures with pdms's headings (`pdms.agent_tracks`: velocity direction, or the road tangent
  when slow); they are constants of the scene, precomputed once in `PlanningContext`. Masked
  agents contribute nothing.
* drivable area: e_t is the lateral offset of the ego centre from the road centreline, by a
  torch port of `pdms.road_frame` (same closed form, stable at κ = 0).
* dynamics (nuPlan's comfort bounds, pdms.COMFORT): longitudinal acceleration in
  [−4.05, 2.40] m/s², |κ v²| ≤ 4.89 m/s², |longitudinal jerk| ≤ 4.13 m/s³; each term is the
  squared excess, zero inside the bounds. The card's relu(|a| − a_max) becomes the asymmetric
  pair relu(a − 2.40) + relu(−4.05 − a) (squared). The signals are the raw spline's, while
  pdms's C smooths them first (Savitzky–Golay), so these bounds are the stricter of the two.
* likelihood: −λ_ℓ log q_S, from the caller's decoder.
sp_β never reaches zero: sp_β(0) = ln 2/β ≈ 0.14 and sp_β(−1) ≈ 1.3·10⁻³ per state, so a plan
hugging a road edge or passing a car one lane over pays a small cost that pushes it away.

Optimisation (`optimise_latents`). The caller picks the top-M latents per scene and supplies
`decode(z [B, M, D]) -> (plans [B, M, 8, 2], log_q [B, M])` (the student conditioned on its
scenes), so this module knows no model class. Adam (lr 0.05, 10 steps) moves every latent on
the sum of the B·M costs (each candidate's gradient is its own; Adam is per-coordinate). The
update is torch.optim.Adam's with its defaults, written out in `_Adam` because torch.optim's
first use imports torch._dynamo (over a second of a 10-step call). Every iterate, the initial
one included, is scored, and each candidate keeps its best iterate (`keep_best`; off, the last
iterate is used as the card literally says), so the returned J never exceeds the initial one;
the plan of the candidate with the smallest J is returned per scene. Gradients are taken with
`torch.autograd.grad` with respect to z only, so the decoder's parameter `.grad`s are left
untouched. Nothing inside is random: equal inputs give equal outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from reprolab.studies.bidrive import pdms
from reprolab.studies.bidrive.pdms import (
    COMFORT,
    DT,
    EGO_LENGTH,
    EGO_WIDTH,
    HEADING_HOLD_SPEED,
    N_WAYPOINTS,
    STEPS,
)

if TYPE_CHECKING:
    from reprolab.studies.bidrive.scenes import Scenes

N_DISKS = 3
EGO_RADIUS = 0.5 * EGO_WIDTH
EGO_HALF_SPAN = max(0.5 * (EGO_LENGTH - EGO_WIDTH), 0.0)  # centre to end disk
_DIST_EPS = 1e-12  # inside square roots, so that coinciding disks keep a finite gradient

Decoder = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class CostWeights:
    """The cost's weights and barrier shape (the card's defaults)."""

    likelihood: float = 1.0  # λ_ℓ
    collision: float = 10.0  # λ_col
    drivable: float = 10.0  # λ_da
    dynamics: float = 1.0  # λ_dyn
    r_safe: float = 1.0  # m, wanted clearance between ego and agent disks
    beta: float = 5.0  # sharpness of sp_β


@dataclass(frozen=True)
class DynamicsLimits:
    """nuPlan's comfort bounds used by the dynamics term (pdms.COMFORT's values)."""

    min_lon_accel: float = COMFORT["min_lon_accel"]  # m/s²
    max_lon_accel: float = COMFORT["max_lon_accel"]  # m/s²
    max_abs_lat_accel: float = COMFORT["max_abs_lat_accel"]  # m/s², bound on |κ| v²
    max_abs_lon_jerk: float = COMFORT["max_abs_lon_jerk"]  # m/s³


# ---------------------------------------------------------------------------------------------
# densification and road geometry


@dataclass(frozen=True)
class TorchRollout:
    """A plan densified to 10 Hz (states t = 0, 0.1, …, 4 s), differentiable in the plan."""

    xy: torch.Tensor  # [B, 41, 2]
    vel: torch.Tensor  # [B, 41, 2]
    acc: torch.Tensor  # [B, 41, 2]
    speed: torch.Tensor  # [B, 41]
    direction: torch.Tensor  # [B, 41, 2]: unit heading vector (held while slow)
    lon_accel: torch.Tensor  # [B, 41]
    lat_accel: torch.Tensor  # [B, 41]: κ v² (left positive)
    lon_jerk: torch.Tensor  # [B, 40]: between consecutive states
    curvature: torch.Tensor  # [B, 41]: κ (1/m), with v floored at the heading-hold speed


def _spline_operators(
    dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """pdms's [10, 41] position, velocity and acceleration operators as tensors."""
    ops = pdms._spline_operators()
    pos, vel, acc = (torch.as_tensor(op, dtype=dtype, device=device) for op in ops)
    return pos, vel, acc


def _held_direction(vel: torch.Tensor, speed: torch.Tensor) -> torch.Tensor:
    """Unit heading vectors [B, T, 2]: the velocity direction, kept at its last value while the
    speed is below HEADING_HOLD_SPEED, +x at t = 0 (pdms's `_hold_heading`)."""
    b, t = speed.shape
    unit = vel / speed.clamp_min(1e-6)[..., None]
    east = torch.zeros_like(unit[:, :1])
    east[..., 0] = 1.0
    unit = torch.cat([east, unit[:, 1:]], dim=1)
    moving = speed.detach() >= HEADING_HOLD_SPEED
    moving[:, 0] = True
    steps = torch.arange(t, device=vel.device).expand(b, t)
    last = torch.where(moving, steps, torch.zeros_like(steps)).cummax(dim=1).values
    return torch.gather(unit, 1, last[..., None].expand(b, t, 2))


def densify_torch(plans: torch.Tensor, ego_speed: torch.Tensor) -> TorchRollout:
    """The 10 Hz rollout of plans [B, 8, 2] from an ego moving at ego_speed [B] along +x
    (`pdms.densify`'s spline, in torch; module docstring)."""
    if plans.ndim != 3 or plans.shape[1:] != (N_WAYPOINTS, 2):
        raise ValueError(f"plans: expected shape [B, {N_WAYPOINTS}, 2], got {list(plans.shape)}")
    if ego_speed.shape != plans.shape[:1]:
        raise ValueError(f"ego_speed: expected shape [{len(plans)}], got {list(ego_speed.shape)}")
    ego_speed = ego_speed.to(plans.dtype)
    origin = torch.zeros_like(plans[:, :1])
    start = torch.stack([ego_speed, torch.zeros_like(ego_speed)], dim=-1)[:, None]
    knots = torch.cat([origin, plans, start], dim=1)  # [B, 10, 2]
    pos_op, vel_op, acc_op = _spline_operators(plans.dtype, plans.device)
    coords = knots.transpose(1, 2)  # [B, 2, 10]
    xy, vel, acc = ((coords @ op).transpose(1, 2) for op in (pos_op, vel_op, acc_op))
    speed = torch.linalg.vector_norm(vel, dim=-1)
    direction = _held_direction(vel, speed)
    lon = (acc * direction).sum(dim=-1)
    lat = direction[..., 0] * acc[..., 1] - direction[..., 1] * acc[..., 0]
    return TorchRollout(
        xy=xy,
        vel=vel,
        acc=acc,
        speed=speed,
        direction=direction,
        lon_accel=lon,
        lat_accel=lat,
        lon_jerk=torch.diff(lon, dim=1) / DT,
        curvature=lat / speed.clamp_min(HEADING_HOLD_SPEED) ** 2,
    )


def road_frame_torch(xy: torch.Tensor, road: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Arc length s and signed lateral offset e (left positive) of ego-frame points xy
    [B, ..., 2] on roads [B, 4] (`pdms.road_frame` in torch, stable as κ → 0)."""
    shape = (-1,) + (1,) * (xy.ndim - 2)
    kappa = road[:, 1].to(xy.dtype).reshape(shape)
    offset = road[:, 3].to(xy.dtype).reshape(shape)
    x, dy = xy[..., 0], xy[..., 1] + offset
    r2 = x * x + dy * dy
    root = torch.sqrt(((1.0 - kappa * dy) ** 2 + (kappa * x) ** 2).clamp_min(_DIST_EPS))
    e = (2.0 * dy - kappa * r2) / (1.0 + root)
    straight = kappa.abs() < 1e-12
    safe = torch.where(straight, torch.ones_like(kappa), kappa)
    s = torch.where(straight, x, torch.atan2(kappa * x, 1.0 - kappa * dy) / safe)
    return s, e


# ---------------------------------------------------------------------------------------------
# the scene side


def _disks(
    centre: torch.Tensor, direction: torch.Tensor, half_span: torch.Tensor | float
) -> torch.Tensor:
    """Disk centres [..., 3, 2] evenly from −half_span to +half_span along `direction` [..., 2] from
    `centre` [..., 2] (a tensor half_span broadcasts against centre[..., 0])."""
    along = torch.linspace(-1.0, 1.0, N_DISKS, dtype=centre.dtype, device=centre.device)
    if isinstance(half_span, torch.Tensor):
        half_span = half_span[..., None, None]
    return centre[..., None, :] + half_span * along[:, None] * direction[..., None, :]


@dataclass(frozen=True)
class PlanningContext:
    """The scene quantities the costs need, as tensors (B scenes, A agent slots)."""

    ego_speed: torch.Tensor  # [B]
    road: torch.Tensor  # [B, 4]: half-width, curvature, lanes, ego offset
    agent_disks: torch.Tensor  # [B, A, 40, 3, 2]: disk centres at t = 0.1 … 4 s
    agent_radius: torch.Tensor  # [B, A]
    agent_mask: torch.Tensor  # [B, A] bool

    def __len__(self) -> int:
        return len(self.ego_speed)

    @classmethod
    def from_arrays(
        cls,
        ego_speed: np.ndarray,
        road: np.ndarray,
        agents: np.ndarray,
        agents_future: np.ndarray,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> PlanningContext:
        """The context of scenes given as pdms's arrays (agents [B, A, 7], futures
        [B, A, 40, 2]); agent headings are `pdms.agent_tracks`'."""
        ego_speed, road, agents, agents_future = pdms._check_scene_arrays(
            len(np.asarray(road)), ego_speed, road, agents, agents_future
        )
        tracks = pdms.agent_tracks(agents, agents_future, road)
        now = slice(1, STEPS + 1)
        heading = tracks.heading[:, :, now]
        direction = np.stack([np.cos(heading), np.sin(heading)], axis=-1)
        half_span = np.maximum(0.5 * (tracks.length - tracks.width), 0.0)

        def tensor(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=device)

        disks = _disks(
            tensor(tracks.xy[:, :, now]), tensor(direction), tensor(half_span[..., None])
        )
        return cls(
            ego_speed=tensor(ego_speed),
            road=tensor(road),
            agent_disks=disks,
            agent_radius=tensor(0.5 * tracks.width),
            agent_mask=torch.as_tensor(tracks.mask, device=device),
        )

    @classmethod
    def from_scenes(
        cls,
        scenes: Scenes,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> PlanningContext:
        """The context of a `Scenes` set."""
        return cls.from_arrays(
            scenes.ego_speed, scenes.road, scenes.agents, scenes.agents_future, dtype, device
        )

    def repeat_interleave(self, m: int) -> PlanningContext:
        """Each scene repeated m times in a row (B·M rows, for M candidates per scene)."""
        return PlanningContext(
            **{f.name: getattr(self, f.name).repeat_interleave(m, dim=0) for f in fields(self)}
        )

    def to(self, dtype: torch.dtype, device: torch.device) -> PlanningContext:
        """The context with its float tensors in `dtype` on `device`."""

        def move(v: torch.Tensor) -> torch.Tensor:
            return v.to(device=device, dtype=dtype if v.is_floating_point() else v.dtype)

        return PlanningContext(**{f.name: move(getattr(self, f.name)) for f in fields(self)})


# ---------------------------------------------------------------------------------------------
# cost terms (unweighted, each [B])


def collision_cost(
    roll: TorchRollout, ctx: PlanningContext, r_safe: float = 1.0, beta: float = 5.0
) -> torch.Tensor:
    """Σ_{t,j} sp_β(r_safe − d_{t,j}) over unmasked agents j and t = 0.1 … 4 s."""
    ego = _disks(roll.xy[:, 1:], roll.direction[:, 1:], EGO_HALF_SPAN)  # [B, 40, 3, 2]
    gap = ego[:, None, :, :, None, :] - ctx.agent_disks[:, :, :, None, :, :]  # [B,A,40,3,3,2]
    dist = torch.sqrt((gap * gap).sum(dim=-1) + _DIST_EPS).amin(dim=(-2, -1))  # [B, A, 40]
    clearance = dist - EGO_RADIUS - ctx.agent_radius[..., None]
    barrier = F.softplus(r_safe - clearance, beta=beta)
    return (barrier * ctx.agent_mask[..., None].to(barrier.dtype)).sum(dim=(1, 2))


def drivable_cost(roll: TorchRollout, road: torch.Tensor, beta: float = 5.0) -> torch.Tensor:
    """Σ_t sp_β(|e_t| − (w − ½ ego width)) over t = 0.1 … 4 s (e of the ego centre)."""
    _, e = road_frame_torch(roll.xy[:, 1:], road)
    margin = road[:, :1].to(e.dtype) - 0.5 * EGO_WIDTH
    return F.softplus(e.abs() - margin, beta=beta).sum(dim=1)


def dynamics_cost(roll: TorchRollout, limits: DynamicsLimits | None = None) -> torch.Tensor:
    """Σ_t squared excesses of the longitudinal acceleration, |κ| v² and the longitudinal jerk
    over their bounds (module docstring); zero for a plan inside all of them."""
    lim = limits or DynamicsLimits()
    lon, lat, jerk = roll.lon_accel, roll.lat_accel, roll.lon_jerk
    cost = F.relu(lon - lim.max_lon_accel) ** 2 + F.relu(lim.min_lon_accel - lon) ** 2
    cost = cost + F.relu(lat.abs() - lim.max_abs_lat_accel) ** 2
    return cost.sum(dim=1) + (F.relu(jerk.abs() - lim.max_abs_lon_jerk) ** 2).sum(dim=1)


@dataclass(frozen=True)
class Costs:
    """The weighted terms of J and their sum, each [B]."""

    likelihood: torch.Tensor  # −λ_ℓ log q
    collision: torch.Tensor
    drivable: torch.Tensor
    dynamics: torch.Tensor
    total: torch.Tensor


def plan_costs(
    plans: torch.Tensor,
    log_q: torch.Tensor,
    ctx: PlanningContext,
    weights: CostWeights | None = None,
    limits: DynamicsLimits | None = None,
) -> Costs:
    """J of plans [B, 8, 2] with student log-likelihoods log_q [B] in their scenes ctx (B rows)."""
    w = weights or CostWeights()
    if log_q.shape != plans.shape[:1]:
        raise ValueError(f"log_q: expected shape [{len(plans)}], got {list(log_q.shape)}")
    if len(ctx) != len(plans):
        raise ValueError(f"ctx: has {len(ctx)} scenes for {len(plans)} plans")
    ctx = ctx.to(plans.dtype, plans.device)
    roll = densify_torch(plans, ctx.ego_speed)
    terms = {
        "likelihood": -w.likelihood * log_q.to(plans.dtype),
        "collision": w.collision * collision_cost(roll, ctx, w.r_safe, w.beta),
        "drivable": w.drivable * drivable_cost(roll, ctx.road, w.beta),
        "dynamics": w.dynamics * dynamics_cost(roll, limits),
    }
    return Costs(**terms, total=sum(terms.values()))


# ---------------------------------------------------------------------------------------------
# latent optimisation


@dataclass(frozen=True)
class LatentHistory:
    """Every iterate's weighted terms [steps + 1, B, M] (iterate 0 is z0), the last latents,
    each candidate's best latents and which candidate each scene returned."""

    total: torch.Tensor
    likelihood: torch.Tensor
    collision: torch.Tensor
    drivable: torch.Tensor
    dynamics: torch.Tensor
    z: torch.Tensor  # [B, M, D], after the last step
    best_z: torch.Tensor  # [B, M, D], each candidate's returned iterate
    pick: torch.Tensor  # [B] long, the candidate returned per scene


class _Adam:
    """Adam (Kingma & Ba; torch.optim.Adam's defaults β = (0.9, 0.999), ε = 1e-8, no weight
    decay) on one tensor, updated in place. Written out because torch.optim's first use imports
    torch._dynamo (over a second), which a 10-step optimisation does not need."""

    def __init__(self, param: torch.Tensor, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.param, self.lr, self.betas, self.eps = param, lr, betas, eps
        self.m = torch.zeros_like(param)
        self.v = torch.zeros_like(param)
        self.t = 0

    @torch.no_grad()
    def step(self, grad: torch.Tensor) -> None:
        """One update of the parameter from its gradient."""
        b1, b2 = self.betas
        self.t += 1
        self.m.mul_(b1).add_(grad, alpha=1.0 - b1)
        self.v.mul_(b2).addcmul_(grad, grad, value=1.0 - b2)
        step = self.lr / (1.0 - b1**self.t)
        denom = (self.v / (1.0 - b2**self.t)).sqrt_().add_(self.eps)
        self.param.addcdiv_(self.m, denom, value=-step)


def _decode_checked(decode: Decoder, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """decode(z) with its output shapes checked."""
    b, m = z.shape[:2]
    plans, log_q = decode(z)
    if plans.shape != (b, m, N_WAYPOINTS, 2):
        raise ValueError(
            f"decode: plans must be [{b}, {m}, {N_WAYPOINTS}, 2], got {list(plans.shape)}"
        )
    if log_q.shape != (b, m):
        raise ValueError(f"decode: log_q must be [{b}, {m}], got {list(log_q.shape)}")
    return plans, log_q


def optimise_latents(
    decode: Decoder,
    z0: torch.Tensor,
    ctx: PlanningContext,
    steps: int = 10,
    lr: float = 0.05,
    weights: CostWeights | None = None,
    limits: DynamicsLimits | None = None,
    keep_best: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, LatentHistory]:
    """Adam on latents z0 [B, M, D] (M candidates for each of B scenes) to lower J.

    `decode(z [B, M, D]) -> (plans [B, M, 8, 2], log_q [B, M])` must be differentiable in z.
    Returns the plan [B, 8, 2] and J [B] of each scene's best candidate (detached) and the
    history (module docstring for `keep_best`).
    """
    if z0.ndim != 3:
        raise ValueError(f"z0: expected shape [B, M, D], got {list(z0.shape)}")
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps: need a non-negative integer, got {steps!r}")
    if not lr > 0.0:
        raise ValueError(f"lr: need a positive learning rate, got {lr}")
    b, m, _ = z0.shape
    if len(ctx) != b:
        raise ValueError(f"ctx: has {len(ctx)} scenes, z0 has {b}")
    flat_ctx = ctx.repeat_interleave(m)
    z = z0.detach().clone().requires_grad_(True)
    adam = _Adam(z, lr)
    best_j = torch.full((b, m), torch.inf, dtype=z.dtype, device=z.device)
    best_plans = torch.zeros(b, m, N_WAYPOINTS, 2, dtype=z.dtype, device=z.device)
    best_z = z.detach().clone()
    records: dict[str, list[torch.Tensor]] = {k: [] for k in Costs.__dataclass_fields__}
    for k in range(steps + 1):
        with torch.set_grad_enabled(k < steps):
            plans, log_q = _decode_checked(decode, z)
            costs = plan_costs(
                plans.reshape(b * m, N_WAYPOINTS, 2),
                log_q.reshape(b * m),
                flat_ctx,
                weights,
                limits,
            )
        total = costs.total.reshape(b, m)
        if not torch.isfinite(total).all():
            raise FloatingPointError(f"optimise_latents: non-finite J at iterate {k}")
        for name, values in records.items():
            values.append(getattr(costs, name).detach().reshape(b, m))
        if keep_best:
            take = total.detach() < best_j
        else:
            take = torch.full((b, m), k == steps, dtype=torch.bool, device=z.device)
        best_j = torch.where(take, total.detach(), best_j)
        best_plans = torch.where(take[..., None, None], plans.detach().to(z.dtype), best_plans)
        best_z = torch.where(take[..., None], z.detach(), best_z)
        if k == steps:
            break
        (grad,) = torch.autograd.grad(total.sum(), z)
        adam.step(grad)
    pick = best_j.argmin(dim=1)
    rows = torch.arange(b, device=z.device)
    history = LatentHistory(
        **{name: torch.stack(values) for name, values in records.items()},
        z=z.detach().clone(),
        best_z=best_z,
        pick=pick,
    )
    return best_plans[rows, pick], best_j[rows, pick], history
