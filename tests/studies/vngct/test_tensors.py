"""Tokenised samples, pixels, the answer loss and the two accuracies."""

from __future__ import annotations

import math

import pytest
import torch

from reprolab.models.tiny_vlm import build_tokenizer
from reprolab.studies.vngct.tensors import (
    IGNORE,
    answer_loss,
    encode_samples,
    exact_match,
    ranked_match,
)

WORDS = ["what", "digit", "is", "shown", "?", "where", "seven", "two", "topleft"]
TOKENS = 3


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer(WORDS)


def _encode(tokenizer, prompts, answers):
    n = len(prompts)
    return encode_samples(tokenizer, prompts, answers, range(n), [True] * n, TOKENS)


def _ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False).input_ids


def test_encode_samples_expands_the_image_and_labels_the_positions_before_each_answer(
    tokenizer,
):
    prompts = ["<image>\nwhat digit is shown ?", "<image>\nwhere ?"]
    samples = _encode(tokenizer, prompts, ["seven topleft", "two"])
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    bos, pad = tokenizer.bos_token_id, tokenizer.pad_token_id
    first = [bos, *[image_id] * TOKENS, *_ids(tokenizer, "\nwhat digit is shown ?")]
    second = [bos, *[image_id] * TOKENS, *_ids(tokenizer, "\nwhere ?")]
    first_answer, second_answer = _ids(tokenizer, " seven topleft"), _ids(tokenizer, " two")
    assert len(first_answer) == 2 and len(second_answer) == 1
    row0, row1 = first + first_answer, second + second_answer
    assert samples.input_ids.shape == (2, len(row0))
    assert samples.input_ids[0].tolist() == row0
    assert samples.input_ids[1].tolist() == row1 + [pad] * (len(row0) - len(row1))
    assert samples.attention_mask.sum(1).tolist() == [len(row0), len(row1)]
    # logits[:, p] predicts token p + 1: the label sits one position before each answer token
    labels0 = [IGNORE] * len(row0)
    labels0[len(first) - 1 : len(first) + 1] = first_answer
    labels1 = [IGNORE] * len(row0)
    labels1[len(second) - 1] = second_answer[0]
    assert samples.labels.tolist() == [labels0, labels1]
    for row in range(2):
        at = (samples.labels[row] != IGNORE).nonzero().flatten()
        assert torch.equal(samples.labels[row, at], samples.input_ids[row, at + 1])
    assert samples.image.tolist() == [0, 1] and samples.visual_needed.tolist() == [True, True]


def test_take_picks_rows_and_trims_to_the_longest(tokenizer):
    prompts = ["<image>\nwhat digit is shown ?", "<image>\nwhere ?", "<image>\n?"]
    samples = _encode(tokenizer, prompts, ["seven topleft", "two", "two"])
    picked = samples.take(torch.tensor([2, 1]))
    length = int(samples.attention_mask[1].sum())
    assert len(picked) == 2 and picked.input_ids.shape == (2, length)
    assert torch.equal(picked.input_ids, samples.input_ids[[2, 1], :length])
    assert torch.equal(picked.labels, samples.labels[[2, 1], :length])
    assert picked.image.tolist() == [2, 1]


def test_references_default_to_the_answer_and_follow_take(tokenizer):
    prompts = ["<image>\nwhere ?", "<image>\nwhat digit is shown ?"]
    samples = _encode(tokenizer, prompts, ["two", "seven"])
    assert samples.references == (("two",), ("seven",))
    given = encode_samples(
        tokenizer, prompts, ["two", "seven"], [0, 1], [True] * 2, TOKENS, [["two", "2"], ["7"]]
    )
    assert given.references == (("two", "2"), ("7",))
    assert given.take(torch.tensor([1, 0])).references == (("7",), ("two", "2"))
    with pytest.raises(ValueError, match="1 reference sets for 2 answers"):
        encode_samples(tokenizer, prompts, ["two", "seven"], [0, 1], [True] * 2, TOKENS, [["2"]])


def test_an_end_token_follows_every_answer_and_is_labelled(tokenizer):
    prompts = ["<image>\nwhere ?"]
    plain = _encode(tokenizer, prompts, ["seven topleft"])
    eos = tokenizer.eos_token_id
    ended = encode_samples(tokenizer, prompts, ["seven topleft"], [0], [True], TOKENS, None, eos)
    assert ended.input_ids[0].tolist() == plain.input_ids[0].tolist() + [eos]
    labelled = ended.labels[0][ended.labels[0] != IGNORE].tolist()
    assert labelled == plain.labels[0][plain.labels[0] != IGNORE].tolist() + [eos]


@pytest.mark.parametrize(
    ("prompt", "count"), [("what digit is shown ?", 0), ("<image> <image>\nwhere ?", 2)]
)
def test_prompts_need_exactly_one_image(tokenizer, prompt, count):
    with pytest.raises(ValueError, match=f"sample 1: prompt .* has {count} <image> placeholders"):
        _encode(tokenizer, ["<image>\nwhere ?", prompt], ["two", "two"])


def test_answers_outside_the_vocabulary_are_refused(tokenizer):
    with pytest.raises(ValueError, match="sample 0: answer 'eight' has words outside"):
        _encode(tokenizer, ["<image>\nwhere ?"], ["eight"])


def _labels(*rows):
    return torch.tensor(rows, dtype=torch.long)


def test_answer_loss_is_the_mean_over_answer_tokens():
    vocab = 5
    logits = torch.zeros(2, 3, vocab)
    logits[0, 0, 2] = 2.0  # sample 0: first answer token (2) is likely, second (4) uniform
    labels = _labels([2, 4, IGNORE], [IGNORE, IGNORE, 1])
    loss = answer_loss(logits, labels)
    first = -(2.0 - math.log(math.exp(2.0) + vocab - 1))
    assert loss.shape == (2,)
    torch.testing.assert_close(loss[0], torch.tensor((first + math.log(vocab)) / 2))
    torch.testing.assert_close(loss[1], torch.tensor(math.log(vocab)))


def test_exact_match_needs_every_answer_token():
    logits = torch.zeros(2, 3, 5)
    logits[0, 0, 2] = logits[0, 1, 4] = 1.0
    logits[1, 0, 2] = logits[1, 1, 3] = 1.0
    logits[:, 2, 0] = 9.0  # positions outside the answer do not count
    labels = _labels([2, 4, IGNORE], [2, 4, IGNORE])
    assert exact_match(logits, labels).tolist() == [True, False]


def test_ranked_match_ranks_the_answer_among_the_choices_only():
    choices = torch.tensor([1, 3])
    logits = torch.zeros(2, 2, 6)
    logits[:, 1, 5] = 10.0  # the greedy token is no choice
    logits[0, 1, 3], logits[0, 1, 1] = 2.0, 1.0  # sample 0: answer 3 beats choice 1
    logits[1, 1, 3], logits[1, 1, 1] = 1.0, 2.0  # sample 1: choice 1 beats answer 3
    labels = _labels([IGNORE, 3], [IGNORE, 3])
    assert ranked_match(logits, labels, choices).tolist() == [True, False]
    assert exact_match(logits, labels).tolist() == [False, False]
