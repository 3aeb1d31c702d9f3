"""hiccr's training steps on a tiny LLaVA: rewards read the conclusion, the warm start learns,
an RL step is seeded, leaves the model unchanged when every group agrees, and HiCCR's step with
zero strengths is GRPO's step exactly."""

from __future__ import annotations

import copy
import dataclasses

import torch

from reprolab.studies.hiccr.credit import CreditConfig
from reprolab.studies.hiccr.data import answer_ids, concludes_with, conclusion
from reprolab.studies.hiccr.rows import ROWS
from reprolab.studies.hiccr.train import (
    RLSettings,
    response_texts,
    rewards,
    rl_step,
    supervised_step,
)

SETTINGS = RLSettings(group_size=4, temperature=1.0, last_layers=1, credit=CreditConfig())


def test_rewards_score_the_conclusion_and_refuse_answers_out_of_format(tokenizer):
    good = "see 1 2 3 4 , 1 + 2 = 3 , 3 + 3 = 6 , 6 + 4 = 0 , so 0"
    wrong_sum = "see 1 2 3 4 , 1 + 2 = 3 , 3 + 3 = 6 , 6 + 4 = 0 , so 9"
    responses = answer_ids(tokenizer, [good, wrong_sum])
    truncated = responses[0].clone()
    truncated[-3] = tokenizer.eos_token_id  # stops before "so 0"
    batch = torch.stack([responses[0], responses[1], truncated])
    assert rewards(tokenizer, batch, [0, 0, 0], concludes_with).tolist() == [1.0, 0.0, 0.0]
    assert rewards(tokenizer, batch[:2], [9, 9], concludes_with).tolist() == [0.0, 1.0]


def test_the_warm_start_lowers_the_loss_of_its_demonstrations(policy, tokenizer, visarith):
    answers = answer_ids(tokenizer, visarith.sft.answers)
    optimizer = torch.optim.Adam(policy.model.parameters(), lr=3e-3)
    losses = [supervised_step(policy, optimizer, visarith.sft.pixels, answers) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]


def step_once(policy, tokenizer, visarith, method, settings=SETTINGS, seed=0, references=(0, 0)):
    model = copy.deepcopy(policy.model)
    policy = copy.copy(policy)
    policy.model = model
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    prompts = dataclasses.replace(visarith.rl.subset([0, 1]), references=list(references))
    stats = rl_step(
        policy,
        tokenizer,
        optimizer,
        ROWS[method],
        settings,
        prompts,
        torch.Generator().manual_seed(seed),
        torch.Generator().manual_seed(seed + 1),
    )
    return stats, torch.cat([p.detach().flatten() for p in model.parameters()])


def rewarded_policy(policy, tokenizer, visarith, seed):
    """The policy after a short warm start on the RL prompts' answers, and references for its
    first two prompts that some but not all of their `seed` rollouts reach: the conclusion of
    each group's first rollout (sampling is seeded, so the step draws the same rollouts)."""
    answers = answer_ids(tokenizer, visarith.rl.answers)
    optimizer = torch.optim.Adam(policy.model.parameters(), lr=1e-2)
    for _ in range(60):
        supervised_step(policy, optimizer, visarith.rl.pixels, answers)
    repeated = visarith.rl.pixels[:2].repeat_interleave(SETTINGS.group_size, 0)
    policy.model.eval()
    sampled = policy.sample(policy.image_tokens(repeated), torch.Generator().manual_seed(seed))
    found = [conclusion(text) for text in response_texts(tokenizer, sampled)]
    return policy, (found[0], found[SETTINGS.group_size])


def test_an_rl_step_repeats_with_its_seeds(policy, tokenizer, visarith):
    first = step_once(policy, tokenizer, visarith, "hiccr")
    again = step_once(policy, tokenizer, visarith, "hiccr")
    assert first[0].reward == again[0].reward and torch.equal(first[1], again[1])


def test_groups_that_agree_leave_the_model_unchanged(policy, tokenizer, visarith):
    before = torch.cat([p.detach().flatten() for p in policy.model.parameters()])
    for method in ROWS:
        stats, after = step_once(policy, tokenizer, visarith, method)
        assert stats.reward == 0.0  # an untrained model never concludes in format
        assert torch.equal(after, before), method


def test_hiccr_with_zero_strengths_takes_grpos_step_exactly(policy, tokenizer, visarith):
    policy, references = rewarded_policy(policy, tokenizer, visarith, seed=5)
    flat = RLSettings(4, 1.0, 1, CreditConfig(alpha=0.0, beta=0.0))
    base_stats, base = step_once(policy, tokenizer, visarith, "grpo", flat, 5, references)
    stats, hiccr = step_once(policy, tokenizer, visarith, "hiccr", flat, 5, references)
    assert 0.0 < base_stats.reward < 1.0  # some groups disagree, so the step moves the model
    before = torch.cat([p.detach().flatten() for p in policy.model.parameters()])
    assert not torch.equal(base, before)
    assert torch.equal(hiccr, base) and stats.loss == base_stats.loss
    _, weighted = step_once(policy, tokenizer, visarith, "hiccr", SETTINGS, 5, references)
    assert not torch.equal(weighted, base)
