"""hiccr's two training stages on a `VisionPolicy`: the supervised warm start and one RL step.

* `supervised_step`: teacher-forced cross-entropy on demonstration answers (every response
  token, the end token included), one Adam step.
* `rl_step`: `group_size` rollouts of each prompt sampled at `temperature`, rewarded by
  `rewards` (1 when the split's verifier accepts the generated answer), turned into token
  advantages by the row's credit rule (`credit.token_advantages`) and one Adam step on the
  clipped surrogate. The grounding scores of the row's weights are the image attention masses
  (`grounding.image_attention_mass`, last `last_layers` layers) of the same forward pass that
  gives the log-probabilities, detached: the weights move credit, they are not trained. Every
  row runs that forward pass with attention probabilities, so the rows differ only in the
  weighting, and the overhead benchmark times exactly the weighting's cost.
* One update per batch of rollouts: π_old is the sampling policy, so ρ = 1 at the update and
  the clipping never binds; the loss is still the clipped surrogate the card and TRL state.
* Prompts that share a question (every VisArith prompt) are sampled and scored in one batch;
  prompts with different questions (paper scale) in one batch per question, whose losses,
  weighted by their share of the prompts, are backpropagated one after the other (so only one
  batch's activations are held) before the single optimiser step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedTokenizerFast

from reprolab.studies.hiccr.credit import CreditConfig, policy_loss, token_advantages
from reprolab.studies.hiccr.data import Split, question_groups
from reprolab.studies.hiccr.grounding import image_attention_mass
from reprolab.studies.hiccr.policy import VisionPolicy
from reprolab.studies.hiccr.rows import Row


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


def response_texts(tokenizer: PreTrainedTokenizerFast, responses: torch.Tensor) -> list[str]:
    """The text of each generated response, up to its first end token."""
    texts = []
    for row in responses.tolist():
        if tokenizer.eos_token_id in row:
            row = row[: row.index(tokenizer.eos_token_id)]
        texts.append(tokenizer.decode(row, skip_special_tokens=True))
    return texts


def rewards(
    tokenizer: PreTrainedTokenizerFast,
    responses: torch.Tensor,
    references: Sequence[Any],
    verify: Callable[[str, Any], bool],
) -> torch.Tensor:
    """[B] verifiable rewards: 1.0 where `verify` accepts a response for its reference, else
    0.0 (a response out of the verifier's format earns nothing)."""
    texts = response_texts(tokenizer, responses)
    return torch.tensor([float(verify(t, r)) for t, r in zip(texts, references, strict=True)])


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
    split: Split,
    sampling: torch.Generator,
) -> Rollouts:
    """The rollouts of every item of `split` (one question: `policy` is its view), rewarded by
    the split's verifier."""
    group = settings.group_size
    repeated = split.pixels[torch.arange(len(split))].repeat_interleave(group, 0)
    policy.model.eval()
    with torch.no_grad():
        responses = policy.sample(policy.image_tokens(repeated), sampling, settings.temperature)
    references = [r for r in split.references for _ in range(group)]
    reward = rewards(tokenizer, responses, references, split.verify)
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
    prompts: Split,
    sampling: torch.Generator,
    noise: torch.Generator,
) -> StepStats:
    """One GRPO-family step of `row` on the items `prompts`: sample, reward, weight, update (one
    batch per question, module docstring)."""
    optimizer.zero_grad()
    total_loss, all_rewards = 0.0, []
    for group in question_groups(prompts.questions, range(len(prompts))):
        items = prompts.subset(group) if len(group) < len(prompts) else prompts
        view = policy.for_question(items.questions[0])
        rollouts = sample_rollouts(view, tokenizer, settings, items, sampling)
        loss = update_loss(view, row, settings, rollouts, noise) * (len(group) / len(prompts))
        loss.backward()
        total_loss += float(loss.detach())
        all_rewards.append(rollouts.rewards)
    optimizer.step()
    return StepStats(float(torch.cat(all_rewards).mean()), total_loss)
