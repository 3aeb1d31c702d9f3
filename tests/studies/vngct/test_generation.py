"""Greedy answers: prompts cut at the first answer label, stopping at EOS, batch invariance."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.models.tiny_vlm import build_tokenizer
from reprolab.studies.vngct.generation import AnswerScorer, greedy_answers, prompt_lengths
from reprolab.studies.vngct.tensors import encode_samples

from .conftest import TOKENS_PER_IMAGE

pytestmark = pytest.mark.usefixtures("torch_one_thread")

WORDS = ["what", "is", "three", "plus", "four", "?", "where", "seven", "two"]
TOKENS = 2


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer(WORDS)


def _samples(tokenizer, prompts, answers, references=None):
    n = len(prompts)
    return encode_samples(tokenizer, prompts, answers, range(n), [False] * n, TOKENS, references)


class ScriptedModel(torch.nn.Module):
    """Stands in for `MLLMAdapter`: after `script`'s keys it predicts their values, after any
    other token the first word of the script; it records the batch widths it was given."""

    def __init__(self, tokenizer, script: dict[str, str], first: str):
        super().__init__()
        self.vocab = len(tokenizer)
        self.first = tokenizer.convert_tokens_to_ids(first)
        self.next = {tokenizer.convert_tokens_to_ids(k): tokenizer.convert_tokens_to_ids(v)
                     for k, v in script.items()}  # fmt: skip
        self.widths: list[int] = []

    def forward(self, input_ids, attention_mask, features, calibrate=False):
        self.widths.append(input_ids.shape[1])
        logits = torch.zeros(*input_ids.shape, self.vocab)
        for row, ids in enumerate(input_ids.tolist()):
            for position, token in enumerate(ids):
                logits[row, position, self.next.get(token, self.first)] = 1.0
        return logits


def test_prompt_lengths_end_before_the_first_answer_token(tokenizer):
    samples = _samples(tokenizer, ["<image> what is three plus four ?", "<image> where ?"],
                       ["seven", "two"])  # fmt: skip
    # <s>, two image tokens, then 6 or 2 words
    assert prompt_lengths(samples).tolist() == [1 + TOKENS + 6, 1 + TOKENS + 2]


def test_greedy_answers_stop_at_eos_for_prompts_of_any_length(tokenizer):
    samples = _samples(tokenizer, ["<image> what is three plus four ?", "<image> where ?"],
                       ["seven", "two"])  # fmt: skip
    model = ScriptedModel(tokenizer, {"▁seven": "▁two", "▁two": "</s>"}, "▁seven")
    features = torch.zeros(2, TOKENS, 4)
    answers = greedy_answers(model, features, samples, tokenizer, False, 8, 10)
    assert answers == ["seven two", "seven two"]
    assert len(model.widths) == 3  # seven, two, then </s> for both: no further step
    model = ScriptedModel(tokenizer, {"▁seven": "▁two", "▁two": "</s>"}, "▁seven")
    assert greedy_answers(model, features, samples, tokenizer, False, 8, 1) == ["seven"] * 2


def test_greedy_answers_without_eos_stop_at_max_new_tokens(tokenizer):
    samples = _samples(tokenizer, ["<image> where ?"], ["two"])
    model = ScriptedModel(tokenizer, {"▁seven": "▁two", "▁two": "▁seven"}, "▁seven")
    answers = greedy_answers(model, torch.zeros(1, TOKENS, 4), samples, tokenizer, False, 8, 3)
    assert answers == ["seven two seven"]


def test_greedy_answers_do_not_depend_on_the_batch(make_adapter, stream):
    """Right padding is exact: a sample's answer is the same alone and beside longer prompts."""
    adapter = make_adapter(0)
    features = adapter.tower_features(stream.images.pixels())
    tokenizer = stream.tokenizer
    prompts = [
        "<image>\nwhere ?",
        "<image>\nwhere is the digit ?",
        "<image>\nwhat ? what ? what is ?",
    ]
    samples = encode_samples(
        tokenizer, prompts, ["two"] * 3, [0, 1, 2], [True] * 3, TOKENS_PER_IMAGE
    )
    assert len(set(prompt_lengths(samples).tolist())) == 3
    alone = [
        greedy_answers(adapter, features, samples.take(torch.tensor([i])), tokenizer, False, 1, 4)
        for i in range(len(samples))
    ]
    together = greedy_answers(adapter, features, samples, tokenizer, False, 3, 4)
    assert together == [answer for (answer,) in alone]
    assert all(together)  # the untrained model writes something before any EOS


def test_answer_scorer_scores_the_greedy_answers(tokenizer):
    samples = _samples(tokenizer, ["<image> where ?", "<image> what is three plus four ?"],
                       ["seven", "two"], [["seven"] * 10, ["four"]])  # fmt: skip
    model = ScriptedModel(tokenizer, {"▁seven": "</s>"}, "▁seven")
    scorer = AnswerScorer("vqa_accuracy", tokenizer, 4)
    scores = scorer(model, torch.zeros(2, TOKENS, 4), samples, False, 8)
    np.testing.assert_allclose(scores, [1.0, 0.0])
