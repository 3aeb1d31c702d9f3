"""bidrive's planners: the flow teacher and student, the flow-matching and regression
baselines, constant velocity, and the selection rules that turn a scene's samples into one plan.

A plan is the card's τ ∈ R^16, 8 waypoints (x, y) at 0.5 … 4 s in the ego frame, handled as
[..., 8, 2] in metres at the interface and flattened row-major (x₀, y₀, x₁, y₁, …, so the
coordinates run in time order) inside the models. Every learned planner conditions on the
scene's raw context vector (`scenes.CONTEXT_FIELDS`, SI units) through its own `ContextEncoder`
(standardisation fitted on the training contexts, then an MLP to a 64-D embedding) and works on
plans standardised per coordinate by a `TrajectoryScaling` fitted on the training experts;
`fit_standardisation(ctx, plans)` sets both (they are buffers, saved with the model).

Flows. A flow planner's density is that of plans in metres: data → noise is the scaling, then
the learned layers on the standardised plan, and the scaling's log-determinant (−Σ log std)
enters every log-probability, so NLLs are in nats per plan in metres and comparable across
planners whatever their scaling. The layers come from `reprolab.models.flows`, conditioned on
the embedding:
* `ARTeacher`, p_T(τ|c): `blocks` MAF layers (`AffineAutoregressive`) over the 16 coordinates
  with `Reverse` between them, so the autoregressive direction alternates (forward in time,
  then backward). The card's TarFlow-style causal transformer over 8 waypoint tokens is
  replaced by MADE over the 16 coordinates [design choice]: the same autoregressive
  factorisation, density in one parallel pass, sampling sequential; one MADE pass per
  coordinate makes it 16 passes per block (64 for 4 blocks, against the card's 8 tokens × 4 =
  32), the "AR bottleneck" the student removes. Each MAF maps a coordinate by the soft-clamped
  affine map or (`element="spline"`) a rational-quadratic spline with identity tails: the
  affine teacher trained on the smoke scenes put spurious high density far from the data
  (ML-selected plans hundreds of metres off in some scenes, an autoregressive run-away of
  shifts), which the spline's bounded map does not.
* `CouplingStudent`, q_S(τ|c) = G(z; c): `couplings` affine couplings in groups of four whose
  masks keep, in turn, the x coordinates, the y coordinates, the early waypoints (0.5–2 s) and
  the late ones (2.5–4 s), so each group updates lateral given longitudinal, longitudinal given
  lateral, late given early and early given late; a fixed random `Permutation` (seeded by
  `seed` + group index) sits between groups, so later groups apply the same masks to a random
  relabelling of the coordinates (random splits) [design choice: the card's LU-parameterised
  linear layers become fixed permutations, keeping every log-determinant exact and free].
  Sampling and the log-probability of the sample are one pass (`decode`), differentiable in the
  latent z for latent optimisation and the reverse KL.
Both sample with z ~ N(0, T²I) (temperature T); the log-probability returned with a sample is
the model's own (untempered) log p(τ|c), the quantity ML selection ranks by.

Baselines. `FlowMatchingPlanner`: conditional rectified flow on the standardised plan,
x_t = (1 − t)·x₀ + t·ε, regressing v_θ(x_t, t, c) on ε − x₀, sampled by Euler steps from t = 1
to 0 (20 by default: NFE = steps). `RegressionPlanner` (MLP-L2): the embedding → the
standardised plan by MSE (the conditional-mean minimiser is the same as in metres; the
standardised targets keep every coordinate's error on one scale). `constant_velocity_plan`:
straight ahead at the current speed.

Randomness: every draw comes from the caller's `torch.Generator` on the CPU and is then moved to
the model's device, so one seed gives the same numbers on a laptop and a GPU. Samples of S
scenes with n per scene are drawn as one [S, n, …] block, scene-major.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from reprolab.models.draws import anchor, normal, sinusoidal_embedding, uniform
from reprolab.models.flows.autoregressive import AffineAutoregressive, SplineAutoregressive
from reprolab.models.flows.base import Chain, Transform, standard_normal_log_prob
from reprolab.models.flows.coupling import AffineCoupling, SplineCoupling
from reprolab.models.flows.permutation import Permutation, Reverse
from reprolab.studies.bidrive.pdms import DT, N_WAYPOINTS, WAYPOINT_STRIDE
from reprolab.studies.bidrive.scenes import CONTEXT_DIM

PLAN_DIM = 2 * N_WAYPOINTS  # 16
EMBED_DIM = 64
WAYPOINT_TIMES = DT * WAYPOINT_STRIDE * np.arange(1, N_WAYPOINTS + 1)  # 0.5 … 4 s
MIN_CONTEXT_STD = 1e-6  # a context field with a smaller spread (unused slot) is left unscaled
MIN_PLAN_STD = 1e-3  # m: floor of a plan coordinate's standard deviation


# ---------------------------------------------------------------------------------------------
# random draws and shapes


def flatten_plans(plans: torch.Tensor) -> torch.Tensor:
    """[..., 8, 2] plans → [..., 16] (x₀, y₀, x₁, y₁, …)."""
    return plans.reshape(*plans.shape[:-2], PLAN_DIM)


def unflatten_plans(flat: torch.Tensor) -> torch.Tensor:
    """[..., 16] → [..., 8, 2]."""
    return flat.reshape(*flat.shape[:-1], N_WAYPOINTS, 2)


def rows_for(embedding: torch.Tensor, lead: torch.Size) -> torch.Tensor:
    """The embedding row of each item of a batch whose leading shape is `lead`: (B,) with one
    scene per item (B rows), or (S, n) with n items per scene (S rows, repeated scene-major)."""
    if len(lead) == 1 and lead[0] == embedding.shape[0]:
        return embedding
    if len(lead) == 2 and lead[0] == embedding.shape[0]:
        return embedding.repeat_interleave(lead[1], 0)
    raise ValueError(
        f"items of leading shape {tuple(lead)} do not match {embedding.shape[0]} contexts: "
        "expected (B,) with B contexts or (S, n) with S contexts"
    )


# ---------------------------------------------------------------------------------------------
# shared parts: context encoder and plan scaling


class ContextEncoder(nn.Module):
    """Raw context [B, 36] → embedding [B, 64]: (ctx − mean) / std with the training contexts'
    statistics (buffers), then an MLP with SiLU activations."""

    def __init__(
        self,
        context_dim: int = CONTEXT_DIM,
        embed_dim: int = EMBED_DIM,
        hidden: Sequence[int] = (128, 128),
    ) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(context_dim))
        self.register_buffer("std", torch.ones(context_dim))
        widths = [context_dim, *hidden]
        layers: list[nn.Module] = []
        for width_in, width_out in zip(widths[:-1], widths[1:], strict=True):
            layers += [nn.Linear(width_in, width_out), nn.SiLU()]
        self.net = nn.Sequential(*layers, nn.Linear(widths[-1], embed_dim))

    @torch.no_grad()
    def fit_standardisation(self, ctx: torch.Tensor | np.ndarray) -> ContextEncoder:
        """Set mean and std from training contexts [N, 36]; fields with (almost) no spread
        keep std 1."""
        ctx = torch.as_tensor(ctx, dtype=self.mean.dtype, device=self.mean.device)
        std = ctx.std(0, unbiased=False)
        self.mean.copy_(ctx.mean(0))
        self.std.copy_(torch.where(std < MIN_CONTEXT_STD, torch.ones_like(std), std))
        return self

    def forward(self, ctx: torch.Tensor) -> torch.Tensor:
        """The embedding of each context row."""
        return self.net((ctx - self.mean) / self.std)


class TrajectoryScaling(Transform):
    """The fixed affine map of flattened plans u = (τ − mean) / std per coordinate (buffers
    fitted on the training experts), as a flow transform: log |det| = −Σ log std per sample.
    It ignores any context."""

    def __init__(self, features: int = PLAN_DIM) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(features))
        self.register_buffer("std", torch.ones(features))

    @torch.no_grad()
    def fit(self, plans: torch.Tensor | np.ndarray) -> TrajectoryScaling:
        """Set mean and std from training plans [N, 8, 2] (std floored at MIN_PLAN_STD)."""
        flat = flatten_plans(torch.as_tensor(plans, dtype=self.mean.dtype, device=self.mean.device))
        self.mean.copy_(flat.mean(0))
        self.std.copy_(flat.std(0, unbiased=False).clamp_min(MIN_PLAN_STD))
        return self

    def log_abs_det(self, x: torch.Tensor) -> torch.Tensor:
        """−Σ log std for each row of x (the same for every row)."""
        return (-self.std.log().sum()).expand(x.shape[0])

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Standardise flattened plans (batch, 16)."""
        return (x - self.mean) / self.std, self.log_abs_det(x)

    def inverse(
        self, y: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Back to metres."""
        return y * self.std + self.mean, -self.log_abs_det(y)


class ConditionalPlanner(nn.Module):
    """What every learned planner holds: a context encoder and the plan scaling."""

    def __init__(self, context_dim: int, embed_dim: int, encoder_hidden: Sequence[int]) -> None:
        super().__init__()
        self.encoder = ContextEncoder(context_dim, embed_dim, encoder_hidden)
        self.scaling = TrajectoryScaling()

    def fit_standardisation(
        self, ctx: torch.Tensor | np.ndarray, plans: torch.Tensor | np.ndarray
    ) -> ConditionalPlanner:
        """Fit the context standardisation on training contexts [N, 36] and the plan scaling on
        training experts [N, 8, 2]; returns the planner."""
        self.encoder.fit_standardisation(ctx)
        self.scaling.fit(plans)
        return self


# ---------------------------------------------------------------------------------------------
# flow planners


class PlanSamples(NamedTuple):
    """Samples of S scenes, n per scene: plans [S, n, 8, 2] in metres, their log-probabilities
    under the sampling model [S, n] (untempered), and the latents z [S, n, 16] they came
    from."""

    plans: torch.Tensor
    log_prob: torch.Tensor
    latents: torch.Tensor


class FlowPlanner(ConditionalPlanner):
    """A conditional flow over plans in metres: data → noise is the scaling then `layers`
    (conditioned on the embedding), with a standard-normal base."""

    def __init__(
        self,
        layers: Sequence[Transform],
        context_dim: int,
        embed_dim: int,
        encoder_hidden: Sequence[int],
    ) -> None:
        super().__init__(context_dim, embed_dim, encoder_hidden)
        self.layers = Chain(*layers)

    def transform(self) -> Transform:
        """The whole data → noise map (scaling, then the layers) as one transform taking the
        embedding as its context: for log-determinant checks."""
        return Chain(self.scaling, self.layers)

    def encode(self, plans: torch.Tensor, ctx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Plans [B, 8, 2] (or [S, n, 8, 2]) → latents z [..., 16] and log |det ∂z/∂τ| [...]:
        one pass for both models (the density direction)."""
        lead = plans.shape[:-2]
        context = rows_for(self.encoder(ctx), lead)
        scaled, scale_log_det = self.scaling(flatten_plans(plans).reshape(-1, PLAN_DIM))
        z, log_det = self.layers(scaled, context)
        return z.reshape(*lead, PLAN_DIM), (scale_log_det + log_det).reshape(lead)

    def log_prob(self, plans: torch.Tensor, ctx: torch.Tensor) -> torch.Tensor:
        """log p(τ | c) of plans in metres, [B] for plans [B, 8, 2] with ctx [B, 36], or [S, n]
        for plans [S, n, 8, 2] with ctx [S, 36]."""
        z, log_det = self.encode(plans, ctx)
        return standard_normal_log_prob(z) + log_det

    def decode(self, z: torch.Tensor, ctx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Latents z [B, 16] (or [S, n, 16]) → plans [..., 8, 2] in metres and their log p(τ|c)
        = log N(z) − log |det ∂τ/∂z|, differentiable in z and the parameters. One pass for the
        student; sequential (16 MADE passes per block) for the teacher."""
        lead = z.shape[:-1]
        context = rows_for(self.encoder(ctx), lead)
        flat_z = z.reshape(-1, PLAN_DIM)
        scaled, log_det = self.layers.inverse(flat_z, context)
        flat, scale_log_det = self.scaling.inverse(scaled)
        log_prob = standard_normal_log_prob(flat_z) - log_det - scale_log_det
        return unflatten_plans(flat).reshape(*lead, N_WAYPOINTS, 2), log_prob.reshape(lead)

    def latents(
        self, scenes: int, n: int, generator: torch.Generator, temperature: float = 1.0
    ) -> torch.Tensor:
        """z ~ N(0, T²I) of shape [scenes, n, 16] from `generator` (CPU, then the model's
        device)."""
        return temperature * normal((scenes, n, PLAN_DIM), generator, anchor(self))

    @torch.no_grad()
    def sample(
        self,
        ctx: torch.Tensor,
        n: int,
        generator: torch.Generator,
        temperature: float = 1.0,
    ) -> PlanSamples:
        """n plans per scene of ctx [S, 36] with their log-probabilities and latents, without
        gradients."""
        z = self.latents(ctx.shape[0], n, generator, temperature)
        plans, log_prob = self.decode(z, ctx)
        return PlanSamples(plans, log_prob, z)


class ARTeacher(FlowPlanner):
    """p_T(τ|c): `blocks` conditional MAF layers with `Reverse` between them (module
    docstring); log-density in one pass, sampling sequential."""

    def __init__(
        self,
        blocks: int = 4,
        hidden: Sequence[int] = (128, 128),
        context_dim: int = CONTEXT_DIM,
        embed_dim: int = EMBED_DIM,
        encoder_hidden: Sequence[int] = (128, 128),
        scale_bound: float = 3.0,
        element: str = "affine",
    ) -> None:
        layers: list[Transform] = []
        for block in range(blocks):
            if block > 0:
                layers.append(Reverse(PLAN_DIM))
            if element == "spline":
                layers.append(SplineAutoregressive(PLAN_DIM, hidden, embed_dim))
            else:
                layers.append(
                    AffineAutoregressive(PLAN_DIM, hidden, embed_dim, scale_bound=scale_bound)
                )
        super().__init__(layers, context_dim, embed_dim, encoder_hidden)


def student_mask(index: int) -> torch.Tensor:
    """The kept coordinates of the index-th coupling of a group of four: the x coordinates, the
    y coordinates, the early waypoints (first four), the late ones (last four)."""
    coordinate = torch.arange(PLAN_DIM)
    is_x, early = coordinate % 2 == 0, coordinate // 2 < N_WAYPOINTS // 2
    return (is_x, ~is_x, early, ~early)[index % 4]


class CouplingStudent(FlowPlanner):
    """q_S(τ|c) = G(z; c): `couplings` affine couplings with x/y and early/late masks and
    seeded permutations between groups of four (module docstring); sampling with its
    log-probability in one pass."""

    def __init__(
        self,
        couplings: int = 8,
        hidden: Sequence[int] = (128, 128),
        context_dim: int = CONTEXT_DIM,
        embed_dim: int = EMBED_DIM,
        encoder_hidden: Sequence[int] = (128, 128),
        scale_bound: float = 3.0,
        seed: int = 0,
        element: str = "affine",
    ) -> None:
        layers: list[Transform] = []
        for index in range(couplings):
            if index > 0 and index % 4 == 0:
                layers.append(Permutation.from_seed(PLAN_DIM, seed + index // 4))
            mask = student_mask(index)
            if element == "spline":
                layers.append(SplineCoupling(mask, hidden, embed_dim))
            else:
                layers.append(AffineCoupling(mask, hidden, embed_dim, scale_bound=scale_bound))
        super().__init__(layers, context_dim, embed_dim, encoder_hidden)

    def sample_with_log_prob(
        self, z: torch.Tensor, ctx: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """G(z; c) and log q_S(G(z)|c) from given latents in one pass (the card's name for
        `decode`), differentiable in z."""
        return self.decode(z, ctx)


# ---------------------------------------------------------------------------------------------
# baselines


def mlp(widths: Sequence[int]) -> nn.Sequential:
    """Linear layers of the given widths with SiLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for width_in, width_out in zip(widths[:-1], widths[1:], strict=True):
        layers += [nn.Linear(width_in, width_out), nn.SiLU()]
    return nn.Sequential(*layers[:-1])


class FlowMatchingPlanner(ConditionalPlanner):
    """Conditional rectified flow on the standardised plan: v_θ(x_t, t, c) by an MLP over
    [x_t, time features, embedding]."""

    def __init__(
        self,
        hidden: Sequence[int] = (256, 256, 256),
        time_width: int = 32,
        context_dim: int = CONTEXT_DIM,
        embed_dim: int = EMBED_DIM,
        encoder_hidden: Sequence[int] = (128, 128),
    ) -> None:
        super().__init__(context_dim, embed_dim, encoder_hidden)
        self.time_width = time_width
        self.velocity = mlp([PLAN_DIM + time_width + embed_dim, *hidden, PLAN_DIM])

    def forward(self, x: torch.Tensor, t: torch.Tensor, embedding: torch.Tensor) -> torch.Tensor:
        """The velocity at standardised plans x (batch, 16), times t (batch,), embeddings
        (batch, 64)."""
        return self.velocity(
            torch.cat([x, sinusoidal_embedding(t, self.time_width), embedding], -1)
        )

    def loss(
        self, plans: torch.Tensor, ctx: torch.Tensor, generator: torch.Generator
    ) -> torch.Tensor:
        """Mean squared error of v_θ(x_t, t, c) against ε − x₀ (per coordinate) at t ~ U(0, 1),
        for plans [B, 8, 2] with ctx [B, 36]."""
        x0, _ = self.scaling(flatten_plans(plans))
        noise = normal(x0.shape, generator, x0)
        t = uniform((x0.shape[0],), generator, x0)
        x_t = (1.0 - t)[:, None] * x0 + t[:, None] * noise
        return (self(x_t, t, self.encoder(ctx)) - (noise - x0)).square().mean()

    @torch.no_grad()
    def sample(
        self, ctx: torch.Tensor, n: int, generator: torch.Generator, steps: int = 20
    ) -> torch.Tensor:
        """n plans [S, n, 8, 2] per scene of ctx [S, 36] by `steps` Euler steps from t = 1 to 0
        (NFE = steps)."""
        scenes = ctx.shape[0]
        embedding = self.encoder(ctx).repeat_interleave(n, 0)
        x = normal((scenes * n, PLAN_DIM), generator, embedding)
        grid = torch.linspace(1.0, 0.0, steps + 1, dtype=x.dtype, device=x.device)
        for start, end in zip(grid[:-1], grid[1:], strict=True):
            x = x + (end - start) * self(x, start.expand(x.shape[0]), embedding)
        flat, _ = self.scaling.inverse(x)
        return unflatten_plans(flat).reshape(scenes, n, N_WAYPOINTS, 2)


class RegressionPlanner(ConditionalPlanner):
    """MLP-L2: the embedding → one standardised plan, trained by MSE (unimodal)."""

    def __init__(
        self,
        hidden: Sequence[int] = (128, 128),
        context_dim: int = CONTEXT_DIM,
        embed_dim: int = EMBED_DIM,
        encoder_hidden: Sequence[int] = (128, 128),
    ) -> None:
        super().__init__(context_dim, embed_dim, encoder_hidden)
        self.head = mlp([embed_dim, *hidden, PLAN_DIM])

    def forward(self, ctx: torch.Tensor) -> torch.Tensor:
        """Plans [B, 8, 2] in metres for ctx [B, 36]."""
        flat, _ = self.scaling.inverse(self.head(self.encoder(ctx)))
        return unflatten_plans(flat)

    def loss(self, plans: torch.Tensor, ctx: torch.Tensor) -> torch.Tensor:
        """Mean squared error on the standardised coordinates."""
        target, _ = self.scaling(flatten_plans(plans))
        return (self.head(self.encoder(ctx)) - target).square().mean()


def constant_velocity_plan(ego_speed: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """Plans [N, 8, 2] straight ahead (+x) at each scene's current speed [N]: x = v·t at
    t = 0.5 … 4 s, y = 0. A tensor in gives a tensor (its dtype and device), an array an
    array."""
    if isinstance(ego_speed, torch.Tensor):
        times = torch.as_tensor(WAYPOINT_TIMES, dtype=ego_speed.dtype, device=ego_speed.device)
        x = ego_speed[:, None] * times
        return torch.stack([x, torch.zeros_like(x)], -1)
    x = np.asarray(ego_speed, dtype=float)[:, None] * WAYPOINT_TIMES
    return np.stack([x, np.zeros_like(x)], -1)


# ---------------------------------------------------------------------------------------------
# selection


def select_max_likelihood(plans: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
    """Per scene, the sample of largest log-probability: plans [S, N, 8, 2] and log_probs
    [S, N] → [S, 8, 2] (the first of tied maxima)."""
    best = log_probs.argmax(1)
    return plans[torch.arange(plans.shape[0], device=plans.device), best]


def select_closest_to_mean(plans: torch.Tensor) -> torch.Tensor:
    """Per scene, the sample closest (Euclidean over all 16 coordinates) to the mean of the
    scene's samples: plans [S, N, 8, 2] → [S, 8, 2] (the FM heuristic)."""
    distance = (plans - plans.mean(1, keepdim=True)).square().sum((-2, -1))
    best = distance.argmin(1)
    return plans[torch.arange(plans.shape[0], device=plans.device), best]
