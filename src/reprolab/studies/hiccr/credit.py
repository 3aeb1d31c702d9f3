"""Credit assignment for group-relative RL with verifiable rewards: advantages, HiCCR's token
and trajectory weights, the random control, and the clipped policy loss.

Shapes: a batch holds `groups × group_size` rollouts (the rollouts of one prompt are
consecutive), each of `T` response tokens; `mask` [B, T] marks the tokens that count (up to and
including the first end-of-sequence token); grounding `scores` [B, T] are per-token visual
grounding signals (`grounding.image_attention_mass` in this study).

Choices:

* **Guarded z-scores.** Every standardisation is `where(std > tol, (x − mean) / std, 0)`. The
  usual `(x − mean) / (std + eps)` turns the floating-point residue of a constant input (values
  equal up to rounding) into O(1) noise; guarded, constant scores give z = 0 exactly, hence
  weights of exactly 1 and a loss and gradients identical to the base algorithm's (tested).
* **Token weights** (HiCCR): w = clip(1 + α·z_t(s), w_min, w_max), then divided by its mean over
  the rollout's counted tokens, so a rollout's total credit is unchanged and only its
  distribution over tokens moves. **Trajectory weights**: u = clip(1 + β·z_g(S), u_min, u_max)
  with S a rollout's mean score and z_g standardised within its group. Â_{i,t} = A_i·u_i·w_{i,t}.
* **Random control**: z replaced by standard normal noise, with the same α, clipping and
  renormalisation. A z-scored score has unit spread within a rollout, so the noise weights have
  the grounded weights' spread before clipping (the abstract's "random per-token scaling").
* `pos_only` leaves rollouts with a non-positive advantage at w = u = 1 (the card's ablation for
  symmetric amplification punishing grounded tokens of wrong rollouts).
* **Loss**: PPO's clipped surrogate min(ρÂ, clip(ρ, 1 ± ε)Â), ρ = π/π_old per token, averaged
  over each rollout's counted tokens and then over rollouts (GRPO, as TRL), or summed over each
  rollout's tokens and divided by the fixed response length (Dr. GRPO). No KL term at smoke
  scale (β_KL = 0, as the card).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from reprolab.studies.hiccr.rows import Row

TOL = 1e-6
"""Spreads at or below this are treated as zero by the guarded z-scores."""


@dataclass(frozen=True)
class CreditConfig:
    """HiCCR's constants: weight strengths, clipping ranges, the pos_only ablation."""

    alpha: float = 0.5
    beta: float = 0.5
    token_clip: tuple[float, float] = (0.2, 3.0)
    trajectory_clip: tuple[float, float] = (0.5, 2.0)
    pos_only: bool = False
    clip_eps: float = 0.2


def guarded_zscore(x: torch.Tensor, mask: torch.Tensor, dim: int, tol: float = TOL) -> torch.Tensor:
    """(x − mean) / std along `dim` over the entries `mask` marks, and 0 where that std is at most
    `tol` (constant inputs give exactly 0) or the entry is not marked."""
    weight = mask.to(x.dtype)
    count = weight.sum(dim, keepdim=True).clamp_min(1.0)
    mean = (x * weight).sum(dim, keepdim=True) / count
    std = (((x - mean) ** 2) * weight).sum(dim, keepdim=True).div(count).sqrt()
    z = (x - mean) / torch.where(std > tol, std, torch.ones_like(std))
    return torch.where((std > tol) & mask, z, torch.zeros_like(x))


def group_advantages(rewards: torch.Tensor, group_size: int, normalise: bool) -> torch.Tensor:
    """Each rollout's reward minus its group's mean, divided by the group's std when `normalise`
    (GRPO; a group of equal rewards gets 0) or not (Dr. GRPO). `rewards` [B] -> [B]."""
    if rewards.ndim != 1 or rewards.numel() % group_size:
        raise ValueError(
            f"rewards of shape {tuple(rewards.shape)}: expected [groups * {group_size}]"
        )
    grouped = rewards.view(-1, group_size)
    every = torch.ones_like(grouped, dtype=torch.bool)
    if normalise:
        return guarded_zscore(grouped, every, dim=1).view(-1)
    return (grouped - grouped.mean(1, keepdim=True)).view(-1)


def _renormalised(raw: torch.Tensor, mask: torch.Tensor, clip: tuple[float, float]) -> torch.Tensor:
    """clip(raw) on counted tokens (0 elsewhere), divided by its mean over them."""
    weight = mask.to(raw.dtype)
    w = raw.clamp(*clip) * weight
    mean = w.sum(1, keepdim=True) / weight.sum(1, keepdim=True).clamp_min(1.0)
    return w / torch.where(mean > 0, mean, torch.ones_like(mean))


def token_weights(scores: torch.Tensor, mask: torch.Tensor, config: CreditConfig) -> torch.Tensor:
    """HiCCR's per-token weights from grounding `scores` [B, T]: mean 1 over each rollout's
    counted tokens, 0 on the others."""
    return _renormalised(
        1.0 + config.alpha * guarded_zscore(scores, mask, 1), mask, config.token_clip
    )


def random_token_weights(
    mask: torch.Tensor, config: CreditConfig, generator: torch.Generator
) -> torch.Tensor:
    """The random control: token weights from standard normal noise (drawn from `generator`),
    with HiCCR's α, clipping and renormalisation."""
    noise = torch.randn(mask.shape, generator=generator, dtype=torch.float32, device=mask.device)
    return _renormalised(1.0 + config.alpha * noise, mask, config.token_clip)


def trajectory_weights(
    scores: torch.Tensor, mask: torch.Tensor, group_size: int, config: CreditConfig
) -> torch.Tensor:
    """HiCCR's per-rollout weights [B]: each rollout's mean score, z-scored within its group."""
    weight = mask.to(scores.dtype)
    engagement = (scores * weight).sum(1) / weight.sum(1).clamp_min(1.0)
    grouped = engagement.view(-1, group_size)
    z = guarded_zscore(grouped, torch.ones_like(grouped, dtype=torch.bool), 1).view(-1)
    return (1.0 + config.beta * z).clamp(*config.trajectory_clip)


def token_advantages(
    row: Row,
    rewards: torch.Tensor,
    mask: torch.Tensor,
    group_size: int,
    config: CreditConfig,
    scores: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Â [B, T] of `row`: the group advantage of each rollout, times its trajectory weight and
    each token's weight (1 where the row does not use them), 0 on tokens `mask` leaves out."""
    advantages = group_advantages(rewards, group_size, normalise=row.base == "grpo")
    ones = mask.to(torch.float32)
    w, u = ones, torch.ones_like(advantages)
    if row.needs_grounding and scores is None:
        raise ValueError(f"row {row}: grounding scores are required")
    if row.token == "grounded":
        w = token_weights(scores, mask, config)
    elif row.token == "random":
        if generator is None:
            raise ValueError("the random token rule needs a generator")
        w = random_token_weights(mask, config, generator)
    if row.trajectory:
        u = trajectory_weights(scores, mask, group_size, config)
    if config.pos_only:
        negative = advantages <= 0
        w = torch.where(negative[:, None], ones, w)
        u = torch.where(negative, torch.ones_like(u), u)
    return advantages[:, None] * u[:, None] * w * ones


def policy_loss(
    row: Row,
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float,
) -> torch.Tensor:
    """The clipped surrogate of `row`'s base algorithm, to minimise. `logp`, `old_logp`,
    `advantages`, `mask`: [B, T] (log-probabilities of the sampled tokens now and at sampling)."""
    ratio = torch.exp(logp - old_logp)
    surrogate = torch.minimum(
        ratio * advantages, ratio.clamp(1 - clip_eps, 1 + clip_eps) * advantages
    )
    weight = mask.to(surrogate.dtype)
    per_token = surrogate * weight
    if row.base == "grpo":
        per_rollout = per_token.sum(1) / weight.sum(1).clamp_min(1.0)
    else:
        per_rollout = per_token.sum(1) / mask.shape[1]
    return -per_rollout.mean()
