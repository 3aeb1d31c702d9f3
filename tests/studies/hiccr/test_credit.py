"""hiccr's credit rules: guarded z-scores, group advantages, HiCCR's token and trajectory
weights, the random control, pos_only, and the clipped loss; HiCCR reduces to its base
algorithm exactly when the grounding scores are constant or its strengths are zero."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from reprolab.studies.hiccr.credit import (
    CreditConfig,
    group_advantages,
    guarded_zscore,
    policy_loss,
    random_token_weights,
    token_advantages,
    token_weights,
    trajectory_weights,
)
from reprolab.studies.hiccr.rows import BASELINE_OF, ROWS, Row

GROUP, GROUPS, LENGTH, VOCAB = 4, 3, 7, 5


def batch(seed: int) -> dict[str, torch.Tensor]:
    """A batch of GROUPS × GROUP rollouts of LENGTH tokens: binary rewards with both values in
    every group, masks of different lengths, positive grounding scores."""
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    lengths = torch.randint(3, LENGTH + 1, (GROUPS * GROUP,), generator=gen)
    mask = torch.arange(LENGTH)[None, :] < lengths[:, None]
    scores = torch.rand(GROUPS * GROUP, LENGTH, generator=gen)
    tokens = torch.randint(0, VOCAB, (GROUPS * GROUP, LENGTH), generator=gen)
    return {"rewards": rewards, "mask": mask, "scores": scores, "tokens": tokens}


class TinyPolicy(torch.nn.Module):
    """Per-position logits as parameters: enough to compare losses and gradients exactly."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.logits = torch.nn.Parameter(torch.randn(GROUPS * GROUP, LENGTH, VOCAB, generator=gen))

    def logp(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.logits, -1).gather(-1, tokens[..., None])[..., 0]


def loss_and_gradient(
    row: Row, data: dict[str, torch.Tensor], config: CreditConfig, scores: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    policy = TinyPolicy()
    logp = policy.logp(data["tokens"])
    old = logp.detach() + 0.1 * torch.sin(torch.arange(LENGTH, dtype=torch.float32))
    advantages = token_advantages(row, data["rewards"], data["mask"], GROUP, config, scores)
    loss = policy_loss(row, logp, old, advantages, data["mask"], config.clip_eps)
    loss.backward()
    return loss.detach(), policy.logits.grad


def test_guarded_zscore_gives_exact_zeros_for_values_equal_up_to_rounding():
    values = torch.full((2, 9), 0.1) * 3.0  # 0.3 up to float rounding, summing with residue
    values[1] = torch.tensor([0.1 + 0.2] * 9)
    mask = torch.ones_like(values, dtype=torch.bool)
    assert torch.equal(guarded_zscore(values, mask, 1), torch.zeros_like(values))
    spread = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    z = guarded_zscore(spread, torch.ones_like(spread, dtype=torch.bool), 1)
    assert torch.allclose(z.mean(), torch.tensor(0.0)) and torch.allclose(
        z.std(unbiased=False), torch.tensor(1.0)
    )


def test_guarded_zscore_ignores_unmarked_entries():
    values = torch.tensor([[1.0, 3.0, 100.0]])
    z = guarded_zscore(values, torch.tensor([[True, True, False]]), 1)
    assert torch.equal(z, torch.tensor([[-1.0, 1.0, 0.0]]))


def test_group_advantages_normalise_for_grpo_and_centre_for_drgrpo():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    grpo = group_advantages(rewards, 4, normalise=True)
    dr = group_advantages(rewards, 4, normalise=False)
    assert torch.allclose(grpo[:4], torch.tensor([3.0, -1.0, -1.0, -1.0]) / 3**0.5)
    assert torch.equal(grpo[4:], torch.zeros(4)) and torch.equal(dr[4:], torch.zeros(4))
    assert torch.allclose(dr[:4], torch.tensor([0.75, -0.25, -0.25, -0.25]))
    with pytest.raises(ValueError, match="groups"):
        group_advantages(torch.ones(6), 4, normalise=True)


def test_token_weights_average_one_over_counted_tokens_and_follow_the_scores():
    data = batch(0)
    w = token_weights(data["scores"], data["mask"], CreditConfig())
    counted = data["mask"].sum(1)
    assert torch.allclose((w * data["mask"]).sum(1) / counted, torch.ones(len(w)), atol=1e-6)
    assert torch.equal(w[~data["mask"]], torch.zeros(int((~data["mask"]).sum())))
    row = 0
    order = data["scores"][row, data["mask"][row]].argsort()
    weights = w[row, data["mask"][row]][order]
    assert torch.all(weights[1:] >= weights[:-1])  # monotone in the score (clipping may tie)


def test_random_token_weights_match_the_grounded_spread_and_repeat_with_the_seed():
    data = batch(1)
    config = CreditConfig(alpha=0.5)
    mask = torch.ones(2000, 20, dtype=torch.bool)
    noise = random_token_weights(mask, config, torch.Generator().manual_seed(3))
    again = random_token_weights(mask, config, torch.Generator().manual_seed(3))
    assert torch.equal(noise, again)
    assert torch.allclose(noise.mean(1), torch.ones(2000), atol=1e-5)
    scores = torch.rand(2000, 20, generator=torch.Generator().manual_seed(4))
    grounded = token_weights(scores, mask, config)
    assert noise.std().item() == pytest.approx(grounded.std().item(), rel=0.1)
    assert (
        random_token_weights(data["mask"], config, torch.Generator())[~data["mask"]].abs().sum()
        == 0
    )


def test_trajectory_weights_rank_rollouts_by_engagement_within_their_group():
    scores = torch.tensor([[0.1] * 3, [0.5] * 3, [0.3] * 3, [0.9] * 3])
    mask = torch.ones_like(scores, dtype=torch.bool)
    u = trajectory_weights(scores, mask, 2, CreditConfig(beta=0.5))
    assert torch.allclose(u, torch.tensor([0.5, 1.5, 0.5, 1.5]))
    clipped = trajectory_weights(scores, mask, 2, CreditConfig(beta=5.0))
    assert torch.allclose(clipped, torch.tensor([0.5, 2.0, 0.5, 2.0]))


@pytest.mark.parametrize("hiccr", sorted(BASELINE_OF))
@pytest.mark.parametrize("case", ["constant_scores", "zero_strengths"])
def test_hiccr_with_constant_weights_equals_its_base_algorithm_exactly(hiccr: str, case: str):
    data = batch(2)
    config = CreditConfig()
    scores = data["scores"]
    if case == "constant_scores":
        # equal up to rounding: an unguarded z-score turns their residue into |z| = 1
        scores = torch.full_like(scores, 0.3)
    else:
        config = dataclasses.replace(config, alpha=0.0, beta=0.0)
    loss, grad = loss_and_gradient(ROWS[hiccr], data, config, scores)
    base_loss, base_grad = loss_and_gradient(ROWS[BASELINE_OF[hiccr]], data, config, None)
    assert torch.equal(loss, base_loss)
    assert torch.equal(grad, base_grad)
    assert grad.abs().sum() > 0


def test_token_weights_alone_keep_a_rollouts_credit_when_the_scores_differ():
    data = batch(3)
    config = CreditConfig()
    hiccr = token_advantages(
        ROWS["token"], data["rewards"], data["mask"], GROUP, config, data["scores"]
    )
    base = token_advantages(ROWS["grpo"], data["rewards"], data["mask"], GROUP, config)
    assert not torch.equal(hiccr, base)
    assert torch.allclose(hiccr.sum(1), base.sum(1), atol=1e-5)


@pytest.mark.parametrize("method", sorted(ROWS))
def test_groups_with_equal_rewards_give_zero_loss_and_zero_gradient(method: str):
    data = batch(4)
    data["rewards"] = torch.tensor([1.0] * GROUP + [0.0] * GROUP + [1.0] * GROUP)
    config = CreditConfig()
    scores = data["scores"] if ROWS[method].needs_grounding else None
    policy = TinyPolicy()
    logp = policy.logp(data["tokens"])
    gen = torch.Generator().manual_seed(0)
    advantages = token_advantages(
        ROWS[method], data["rewards"], data["mask"], GROUP, config, scores, gen
    )
    loss = policy_loss(ROWS[method], logp, logp.detach(), advantages, data["mask"], 0.2)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(policy.logits.grad, torch.zeros_like(policy.logits))


def test_pos_only_leaves_rollouts_with_negative_advantage_unweighted():
    data = batch(5)
    config = CreditConfig(pos_only=True)
    hiccr = token_advantages(
        ROWS["hiccr"], data["rewards"], data["mask"], GROUP, config, data["scores"]
    )
    base = token_advantages(ROWS["grpo"], data["rewards"], data["mask"], GROUP, config)
    negative = group_advantages(data["rewards"], GROUP, normalise=True) <= 0
    assert torch.equal(hiccr[negative], base[negative])
    assert not torch.equal(hiccr[~negative], base[~negative])


def test_the_loss_clips_the_ratio_and_aggregates_per_base_algorithm():
    logp = torch.log(torch.tensor([[0.5, 0.5], [0.5, 0.5]]))
    old = torch.log(torch.tensor([[0.25, 0.5], [0.5, 0.5]]))  # ratio 2 on the first token
    advantages = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
    mask = torch.tensor([[True, True], [True, False]])
    grpo = policy_loss(ROWS["grpo"], logp, old, advantages, mask, clip_eps=0.2)
    dr = policy_loss(ROWS["drgrpo"], logp, old, advantages, mask, clip_eps=0.2)
    # rollout 0: (min(2, 1.2) + 1) / 2 = 1.1; rollout 1: -1 over one counted token
    assert grpo.item() == pytest.approx(-(1.1 + -1.0) / 2)
    # Dr. GRPO divides each rollout's sum by the full length 2
    assert dr.item() == pytest.approx(-((2.2 / 2) + (-1.0 / 2)) / 2)


def test_rows_refuse_unknown_parts_and_need_scores_when_grounded():
    with pytest.raises(ValueError, match="base"):
        Row("ppo", "uniform", False)
    with pytest.raises(ValueError, match="token rule"):
        Row("grpo", "attention", False)
    data = batch(6)
    with pytest.raises(ValueError, match="grounding scores"):
        token_advantages(ROWS["hiccr"], data["rewards"], data["mask"], GROUP, CreditConfig())
    with pytest.raises(ValueError, match="generator"):
        token_advantages(ROWS["random"], data["rewards"], data["mask"], GROUP, CreditConfig())
