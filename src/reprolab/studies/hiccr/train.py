"""hiccr's two training stages on a `VisionPolicy`: the supervised warm start and one RL step.

* `supervised_step`: teacher-forced cross-entropy on demonstration answers (every response
  token, the end token included), one Adam step.
* `rl_step`: `group_size` rollouts of each prompt sampled at `temperature`, rewarded by
  `rewards` (1 when the generated answer's conclusion is the reference's), turned into token
  advantages by the row's credit rule (`credit.token_advantages`) and one Adam step on the
  clipped surrogate. The grounding scores of the row's weights are the image attention masses
  (`grounding.image_attention_mass`, last `last_layers` layers) of the same forward pass that
  gives the log-probabilities, detached: the weights move credit, they are not trained. Every
  row runs that forward pass with attention probabilities, so the rows differ only in the
  weighting, and the overhead benchmark times exactly the weighting's cost.
* One update per batch of rollouts: π_old is the sampling policy, so ρ = 1 at the update and
  the clipping never binds; the loss is still the clipped surrogate the card and TRL state.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerFast

from reprolab.studies.hiccr.credit import CreditConfig, policy_loss, token_advantages
from reprolab.studies.hiccr.grounding import image_attention_mass
from reprolab.studies.hiccr.policy import VisionPolicy
from reprolab.studies.hiccr.rows import Row

CONCLUSION = re.compile(r"(?:^|\s)so\s+(\d)\s*$")
"""A response's closing `so <digit>`."""


def supervised_step(
    policy: VisionPolicy,
    optimizer: torch.optim.Optimizer,
    pixels: torch.Tensor,
    answers: torch.Tensor,
) -> float:
    """One step of mean token cross-entropy on `answers` [B, T] given images `pixels`."""
    policy.model.train()
    loss = -policy.response_logprobs(pixels, answers).logp.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def conclusion(text: str) -> int | None:
    """The answer a response concludes with: the digit of its closing `so <digit>`, None when
    it does not end that way. Only the conclusion is verified, as RLVR extracts a final answer
    and ignores the working: a chain with a slip in it still earns the reward when its
    conclusion is right (and a strict format check would leave almost every rollout sampled at
    temperature 1 unrewarded)."""
    match = CONCLUSION.search(text)
    return None if match is None else int(match.group(1))


def conclusions(tokenizer: PreTrainedTokenizerFast, responses: torch.Tensor) -> list[int | None]:
    """`conclusion` of each generated response (its text up to its first end token)."""
    found = []
    for row in responses.tolist():
        if tokenizer.eos_token_id in row:
            row = row[: row.index(tokenizer.eos_token_id)]
        found.append(conclusion(tokenizer.decode(row, skip_special_tokens=True)))
    return found


def rewards(
    tokenizer: PreTrainedTokenizerFast, responses: torch.Tensor, references: Sequence[int]
) -> torch.Tensor:
    """[B] verifiable rewards: 1.0 where a response concludes with its reference, else 0.0 (a
    response out of the format concludes nothing)."""
    found = conclusions(tokenizer, responses)
    return torch.tensor([float(f == r) for f, r in zip(found, references, strict=True)])


@dataclass(frozen=True)
class StepStats:
    """What one RL step did: the rollouts' mean reward and the loss."""

    reward: float
    loss: float


@dataclass(frozen=True)
class RLSettings:
    """The RL step's constants shared by every row."""

    group_size: int
    temperature: float
    last_layers: int
    credit: CreditConfig


@dataclass(frozen=True)
class Rollouts:
    """`group_size` sampled responses per prompt: their images, tokens, rewards and masks."""

    pixels: torch.Tensor
    responses: torch.Tensor
    rewards: torch.Tensor
    mask: torch.Tensor


def sample_rollouts(
    policy: VisionPolicy,
    tokenizer: PreTrainedTokenizerFast,
    settings: RLSettings,
    pixels: torch.Tensor,
    references: Sequence[int],
    sampling: torch.Generator,
) -> Rollouts:
    """The rollouts of the prompts' images `pixels` [n, ...], rewarded against `references`."""
    group = settings.group_size
    repeated = pixels.repeat_interleave(group, 0)
    policy.model.eval()
    with torch.no_grad():
        responses = policy.sample(policy.image_tokens(repeated), sampling, settings.temperature)
    reward = rewards(tokenizer, responses, [r for r in references for _ in range(group)])
    return Rollouts(repeated, responses, reward, policy.response_mask(responses))


def update_loss(
    policy: VisionPolicy,
    row: Row,
    settings: RLSettings,
    rollouts: Rollouts,
    noise: torch.Generator | None,
) -> torch.Tensor:
    """`row`'s loss on `rollouts`, to differentiate: log-probabilities (with the attention
    probabilities, whatever the row), grounding scores where the row weighs by them, token
    advantages, clipped surrogate."""
    policy.model.train()
    out = policy.response_logprobs(rollouts.pixels, rollouts.responses, attentions=True)
    scores = None
    if row.needs_grounding:
        image = policy.image_mask(len(rollouts.responses))
        scores = image_attention_mass(
            out.attentions, image, policy.prompt_length, settings.last_layers
        ).detach()
    advantages = token_advantages(
        row, rollouts.rewards, rollouts.mask, settings.group_size, settings.credit, scores, noise
    )
    return policy_loss(
        row, out.logp, out.logp.detach(), advantages, rollouts.mask, settings.credit.clip_eps
    )


def rl_step(
    policy: VisionPolicy,
    tokenizer: PreTrainedTokenizerFast,
    optimizer: torch.optim.Optimizer,
    row: Row,
    settings: RLSettings,
    pixels: torch.Tensor,
    references: Sequence[int],
    sampling: torch.Generator,
    noise: torch.Generator,
) -> StepStats:
    """One GRPO-family step of `row` on the prompts' images `pixels` [n, ...] with reference
    conclusions `references`: sample, reward, weight, update."""
    rollouts = sample_rollouts(policy, tokenizer, settings, pixels, references, sampling)
    loss = update_loss(policy, row, settings, rollouts, noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return StepStats(float(rollouts.rewards.mean()), float(loss.detach()))
