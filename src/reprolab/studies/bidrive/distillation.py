"""bidrive's bidirectional distillation of the autoregressive teacher into the coupling student.

L_S = α_d·E_data[−log q_S(τ*|c)] + α_f·E_{τ~p_T}[−log q_S(τ|c)] + α_r·E_z[log q_S(G(z;c)|c) −
log p_T(G(z;c)|c)] (the card's section 2): the data NLL; the forward KL (mode covering) up to the
teacher's entropy, on teacher samples, which is cheap for the student (its density is one pass)
and expensive for the teacher (sequential sampling), hence cached; and the reverse KL (mode
seeking) on the student's own samples, each a one-pass decode with its log q_S, scored by the
teacher's one-pass density and differentiated through the teacher into the student. Every term
is in nats per plan (plans in metres, the planners' convention), averaged over the batch, so
α_d = α_f = α_r = 1 weighs them as the card does.

Choices: the teacher is frozen (no parameter requires a gradient; `reverse_kl_loss` refuses a
trainable one, so a forgotten freeze is an error and not a teacher that silently accumulates
gradients); reverse-KL latents are z ~ N(0, I) (temperature 1, the density being matched), `n`
per scene, from the caller's CPU generator; a term whose weight is 0 is not computed (the
ablations). `TeacherSampleCache` holds `per_scene` teacher samples (temperature 1) of every
training scene and redraws all of them every `refresh` steps; refresh r draws from a
`torch.Generator` seeded by `cache_seed(seed, r)` (numpy's SeedSequence of (seed, r)), so
refresh r's samples depend on the seed, r and the teacher alone, not on what was drawn before
(nor on the training generator), and one seed gives the same samples on every device; a
refresh's latents are one draw, so decoding in chunks does not change them. A refresh is the
teacher's sequential sampling of N·per_scene plans (about 10 s for 20k scenes × 4 on one CPU
thread at the default sizes).
"""

from __future__ import annotations

import numpy as np
import torch

from reprolab.studies.bidrive.planners import FlowPlanner


def freeze(teacher: FlowPlanner) -> FlowPlanner:
    """The teacher with every parameter's gradient switched off and in eval mode (in place)."""
    return teacher.requires_grad_(False).eval()


def data_nll_loss(student: FlowPlanner, expert: torch.Tensor, ctx: torch.Tensor) -> torch.Tensor:
    """E_data[−log q_S(τ*|c)]: the student's mean NLL (nats per plan) of expert plans
    [B, 8, 2] with ctx [B, 36]."""
    return -student.log_prob(expert, ctx).mean()


def forward_kl_loss(
    student: FlowPlanner, teacher_plans: torch.Tensor, ctx: torch.Tensor
) -> torch.Tensor:
    """E_{τ~p_T}[−log q_S(τ|c)] on given teacher samples: [B, 8, 2] with ctx [B, 36], or
    [S, k, 8, 2] with ctx [S, 36] (k samples per scene)."""
    return -student.log_prob(teacher_plans, ctx).mean()


def reverse_kl_loss(
    student: FlowPlanner,
    teacher: FlowPlanner,
    ctx: torch.Tensor,
    generator: torch.Generator,
    n: int = 1,
) -> torch.Tensor:
    """E_z[log q_S(G(z)|c) − log p_T(G(z)|c)] with z ~ N(0, I), n latents per scene of ctx
    [S, 36]: a Monte-Carlo estimate of KL(q_S ‖ p_T) averaged over the scenes, differentiable
    in the student's parameters through G and through the (frozen) teacher's density."""
    if any(parameter.requires_grad for parameter in teacher.parameters()):
        raise ValueError("reverse_kl_loss: freeze the teacher first (distillation.freeze)")
    z = student.latents(ctx.shape[0], n, generator)
    plans, log_q = student.decode(z, ctx)
    return (log_q - teacher.log_prob(plans, ctx)).mean()


def distillation_loss(
    student: FlowPlanner,
    teacher: FlowPlanner,
    expert: torch.Tensor,
    ctx: torch.Tensor,
    teacher_plans: torch.Tensor,
    generator: torch.Generator,
    alpha_data: float = 1.0,
    alpha_forward: float = 1.0,
    alpha_reverse: float = 1.0,
    reverse_samples: int = 1,
) -> tuple[torch.Tensor, dict[str, float]]:
    """α_d·data NLL + α_f·forward KL + α_r·reverse KL on a batch of scenes: expert plans
    [B, 8, 2], ctx [B, 36], cached teacher samples [B, k, 8, 2] (or [B, 8, 2]), and
    `reverse_samples` student latents per scene. Returns the loss and each computed term's
    value (keys "data", "forward", "reverse"; a zero-weight term is skipped)."""
    total = ctx.new_zeros(())
    terms: dict[str, float] = {}
    parts = (
        ("data", alpha_data, lambda: data_nll_loss(student, expert, ctx)),
        ("forward", alpha_forward, lambda: forward_kl_loss(student, teacher_plans, ctx)),
        (
            "reverse",
            alpha_reverse,
            lambda: reverse_kl_loss(student, teacher, ctx, generator, reverse_samples),
        ),
    )
    for name, weight, term in parts:
        if weight == 0.0:
            continue
        value = term()
        terms[name] = value.item()
        total = total + weight * value
    return total, terms


def cache_seed(seed: int, refresh_index: int) -> int:
    """The seed of refresh `refresh_index`'s generator: numpy's SeedSequence of (seed,
    refresh_index), so neighbouring seeds and refreshes give unrelated streams."""
    state = np.random.SeedSequence((seed, refresh_index)).generate_state(1, dtype=np.uint64)
    return int(state[0])


class TeacherSampleCache:
    """`per_scene` teacher samples [N, per_scene, 8, 2] of each of the N training scenes,
    redrawn every `refresh` steps (module docstring for the seeding). The samples live on the
    teacher's device; they are decoded in chunks of `chunk` scenes without gradients."""

    def __init__(
        self,
        teacher: FlowPlanner,
        ctx: torch.Tensor,
        per_scene: int = 4,
        refresh: int = 100,
        seed: int = 0,
        chunk: int = 2048,
    ) -> None:
        if per_scene < 1 or refresh < 1 or chunk < 1:
            raise ValueError(
                f"TeacherSampleCache: per_scene, refresh and chunk must be positive, got "
                f"{per_scene}, {refresh}, {chunk}"
            )
        self.teacher, self.ctx = teacher, ctx
        self.per_scene, self.refresh, self.seed, self.chunk = per_scene, refresh, seed, chunk
        self.refresh_index: int | None = None
        self.plans: torch.Tensor | None = None

    @torch.no_grad()
    def draw(self, refresh_index: int) -> torch.Tensor:
        """The samples [N, per_scene, 8, 2] of refresh `refresh_index`: all latents in one draw
        (so the numbers do not depend on `chunk`), decoded `chunk` scenes at a time."""
        generator = torch.Generator().manual_seed(cache_seed(self.seed, refresh_index))
        z = self.teacher.latents(self.ctx.shape[0], self.per_scene, generator)
        parts = [
            self.teacher.decode(
                z[start : start + self.chunk], self.ctx[start : start + self.chunk]
            )[0]
            for start in range(0, self.ctx.shape[0], self.chunk)
        ]
        return torch.cat(parts)

    def samples(self, step: int, rows: torch.Tensor | None = None) -> torch.Tensor:
        """The cached samples [B, per_scene, 8, 2] of the scenes `rows` (all when None) at
        training step `step` (0-based), redrawing them first when `step` starts a new refresh
        period (steps r·refresh … (r + 1)·refresh − 1 use refresh r)."""
        index = step // self.refresh
        if index != self.refresh_index:
            self.plans, self.refresh_index = self.draw(index), index
        assert self.plans is not None
        return self.plans if rows is None else self.plans[rows]
