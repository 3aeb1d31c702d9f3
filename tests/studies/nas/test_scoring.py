"""How an edited model is scored (studies/nas/scoring.py), checked against log-probabilities
computed by hand from one unpadded forward pass per prompt and answer of a small trained fact
LM: an answer's tokens follow the prompt after a space; the one-pass path for single-token
candidates agrees with the generic prompt-plus-answer path; a two-token answer scores the sum
of its two tokens' log-probabilities; scores keep their prompt and candidate order across
batches; and `share_preferred` counts a prompt only when the wanted answer is strictly best
(a tie does not count), nan for no prompts."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from reprolab.models.fact_lm import fact_tokenizer, object_ids
from reprolab.models.facts import query
from reprolab.studies.nas import scoring
from reprolab.studies.nas.scoring import candidate_scores, continuation_ids, share_preferred
from tests.studies.nas.conftest import WORLD

FIRST, SECOND = WORLD.relations[0].objects[:2]
PAIR = f"{FIRST} {SECOND}"
"""A real two-word answer: two object words of the world's vocabulary."""


@pytest.fixture(scope="module")
def fact_lm(fact_lm_dir):
    from transformers import GPT2LMHeadModel

    return GPT2LMHeadModel.from_pretrained(fact_lm_dir), fact_tokenizer(WORLD)


def prompts_and_candidates() -> tuple[list[str], list[tuple[str, ...]]]:
    """Queries of different lengths (openings of 0 to 2 fillers, templates of 2 to 4 words),
    each with its relation's objects, one group shorter and in another order."""
    prompts = [
        query(WORLD, 0, 0, 0),
        query(WORLD, 5, 1, 1, ("well", "so")),
        query(WORLD, 9, 0, 3, ("now",)),
        query(WORLD, 12, 1, 2),
    ]
    groups = [tuple(WORLD.relations[r].objects) for r in (0, 1, 0, 1)]
    groups[2] = tuple(reversed(groups[2]))[:3]
    return prompts, groups


@torch.no_grad()
def logprobs(model: torch.nn.Module, ids: list[int]) -> torch.Tensor:
    """Log-probabilities of one unpadded row of tokens, (length, vocabulary)."""
    model.eval()
    return model(input_ids=torch.tensor([ids])).logits[0].log_softmax(dim=-1)


def by_hand(model: torch.nn.Module, tokenizer, prompt: str, answer: str) -> float:
    """The summed log-probability of `answer`'s tokens after `prompt`, from one forward pass
    over prompt + answer."""
    prompt_ids = tokenizer(prompt).input_ids
    answer_ids = tokenizer(f" {answer}", add_special_tokens=False).input_ids
    table = logprobs(model, prompt_ids + answer_ids)
    start = len(prompt_ids) - 1
    return sum(float(table[start + k, token]) for k, token in enumerate(answer_ids))


def flat(rows: list[list[float]]) -> list[float]:
    return [value for row in rows for value in row]


def test_continuation_ids_are_the_answer_words_after_a_space():
    tokenizer = fact_tokenizer(WORLD)
    objects = WORLD.relations[1].objects
    assert [continuation_ids(tokenizer, word) for word in objects] == [
        [token] for token in object_ids(tokenizer, objects)
    ]
    first, second = continuation_ids(tokenizer, FIRST), continuation_ids(tokenizer, SECOND)
    assert continuation_ids(tokenizer, PAIR) == first + second
    assert tokenizer.bos_token_id not in continuation_ids(tokenizer, PAIR)
    # after a space: the token differs from the word's token at the start of a text
    assert tokenizer(FIRST, add_special_tokens=False).input_ids != first


def test_single_token_scores_are_the_log_probabilities_after_the_prompt(fact_lm):
    model, tokenizer = fact_lm
    prompts, groups = prompts_and_candidates()
    fast = candidate_scores(model, tokenizer, prompts, groups)
    assert [len(row) for row in fast] == [len(group) for group in groups]
    pairs = [(p, a) for p, group in zip(prompts, groups, strict=True) for a in group]
    expected = [by_hand(model, tokenizer, p, a) for p, a in pairs]
    assert flat(fast) == pytest.approx(expected, abs=1e-5)
    assert all(score < 0 for score in flat(fast))


def test_the_one_pass_path_agrees_with_the_generic_path(fact_lm):
    model, tokenizer = fact_lm
    prompts, groups = prompts_and_candidates()
    fast = candidate_scores(model, tokenizer, prompts, groups)
    # one two-token candidate sends every prompt down the prompt + answer path
    generic = candidate_scores(model, tokenizer, prompts, [(*g, PAIR) for g in groups])
    assert flat([row[:-1] for row in generic]) == pytest.approx(flat(fast), abs=1e-5)


def test_a_two_token_answer_scores_the_sum_of_its_tokens_log_probabilities(fact_lm):
    model, tokenizer = fact_lm
    prompts, groups = prompts_and_candidates()
    scores = candidate_scores(model, tokenizer, prompts, [(PAIR, *g) for g in groups])
    for prompt, row in zip(prompts, scores, strict=True):
        prompt_ids = tokenizer(prompt).input_ids
        first, second = continuation_ids(tokenizer, FIRST), continuation_ids(tokenizer, SECOND)
        table = logprobs(model, prompt_ids + first + second)
        end = len(prompt_ids) - 1
        expected = float(table[end, first[0]]) + float(table[end + 1, second[0]])
        assert row[0] == pytest.approx(expected, abs=1e-5)
        # not the first token's score alone: the second token costs something
        assert row[0] < float(table[end, first[0]])


def test_scores_keep_their_order_across_batches(fact_lm, monkeypatch):
    model, tokenizer = fact_lm
    prompts, groups = prompts_and_candidates()
    mixed = [(*g, PAIR) for g in groups]
    whole = (
        candidate_scores(model, tokenizer, prompts, groups),
        candidate_scores(model, tokenizer, prompts, mixed),
    )
    monkeypatch.setattr(scoring, "BATCH", 3)
    chunked = (
        candidate_scores(model, tokenizer, prompts, groups),
        candidate_scores(model, tokenizer, prompts, mixed),
    )
    for one, other in zip(whole, chunked, strict=True):
        assert [len(row) for row in one] == [len(row) for row in other]
        assert flat(one) == pytest.approx(flat(other), abs=1e-5)


class Bigram(torch.nn.Module):
    """A stand-in LM whose next-token logits are a fixed row per current token."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.table = table

    @property
    def device(self) -> torch.device:
        return self.table.device

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
        return SimpleNamespace(logits=self.table[input_ids])


def test_share_preferred_counts_only_a_strictly_best_answer():
    tokenizer = fact_tokenizer(WORLD)
    objects = WORLD.relations[0].objects
    wanted, rival, third = objects[:3]
    ids = {word: continuation_ids(tokenizer, word)[0] for word in objects}
    table = torch.zeros(len(tokenizer), len(tokenizer))
    # the three prompts end in different words: "in", "as", "of"
    prompts = [query(WORLD, 0, 0, 0), query(WORLD, 0, 1, 0), query(WORLD, 0, 1, 3)]
    ends = [tokenizer(p).input_ids[-1] for p in prompts]
    assert len(set(ends)) == 3
    table[ends[0], ids[wanted]] = table[ends[0], ids[rival]] = 5.0  # a tie
    table[ends[1], ids[wanted]], table[ends[1], ids[rival]] = 5.0, 4.0  # strictly best
    table[ends[2], ids[wanted]], table[ends[2], ids[rival]] = 4.0, 5.0  # beaten
    model = Bigram(table)
    candidates = [(wanted, rival, third)] * 3
    scores = candidate_scores(model, tokenizer, prompts, candidates)
    assert scores[0][0] == scores[0][1]
    assert share_preferred(model, tokenizer, prompts, candidates, [wanted] * 3) == 1 / 3
    assert share_preferred(model, tokenizer, prompts, candidates, [rival] * 3) == 1 / 3
    assert share_preferred(model, tokenizer, prompts, candidates, [third] * 3) == 0.0
    for index in range(3):
        alone = share_preferred(model, tokenizer, [prompts[index]], [candidates[0]], [wanted])
        assert alone == [0.0, 1.0, 0.0][index]


def test_share_preferred_on_the_trained_model(fact_lm):
    model, tokenizer = fact_lm
    facts = [(s, r) for s in range(0, 16, 3) for r in range(2)]
    prompts = [query(WORLD, s, r, 0) for s, r in facts]
    candidates = [WORLD.relations[r].objects for _, r in facts]
    truth = [WORLD.object_of(s, r) for s, r in facts]
    assert share_preferred(model, tokenizer, prompts, candidates, truth) == 1.0
    others = [o[(o.index(t) + 1) % 4] for o, t in zip(candidates, truth, strict=True)]
    assert share_preferred(model, tokenizer, prompts, candidates, others) == 0.0
    half = np.where(np.arange(len(facts)) % 2 == 0, truth, others).tolist()
    assert share_preferred(model, tokenizer, prompts, candidates, half) == pytest.approx(0.5)


def test_share_preferred_is_nan_for_no_prompts(fact_lm):
    model, tokenizer = fact_lm
    assert math.isnan(share_preferred(model, tokenizer, [], [], []))
