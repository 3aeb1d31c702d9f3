"""Answers generated greedily by an `MLLMAdapter`, and a task's scorer built on them.

`greedy_answers` decodes each sample's answer after its prompt (the tokens before its first
answer label, `tensors.Samples`), one token at a time, taking the most likely token, until the
tokenizer's end-of-sequence token or `max_new_tokens`. `AnswerScorer` is what a task whose
metric params declare (`scoring`) is evaluated with: the generated answers scored against the
samples' reference answers.

Choices: no key-value cache. Each step runs the whole right-padded sequence again, which is
exact without position bookkeeping (a sample's tokens keep positions 0, 1, ... whatever the
others' lengths, and causal attention never sees the padding after them) at the price of
``max_new_tokens`` full forwards per batch. The text is cut at its first line break (answers
are one line, as LLaVA's evaluation reads them) and stripped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers import PreTrainedTokenizerFast

from reprolab.studies.vngct.adapter import MLLMAdapter
from reprolab.studies.vngct.scoring import score_answers
from reprolab.studies.vngct.tensors import IGNORE, Samples


def prompt_lengths(samples: Samples) -> torch.Tensor:
    """``[N]`` number of prompt tokens per sample: the position of its first answer token."""
    answer = samples.labels != IGNORE
    if not bool(answer.any(1).all()):
        raise ValueError("a sample has no answer label, so its prompt's end is unknown")
    return answer.int().argmax(1) + 1


def _greedy_batch(
    adapter: MLLMAdapter,
    features: torch.Tensor,
    batch: Samples,
    tokenizer: PreTrainedTokenizerFast,
    calibrate: bool,
    max_new_tokens: int,
) -> list[str]:
    """Greedy answers of one batch (see the module docstring)."""
    lengths = prompt_lengths(batch).to(batch.input_ids.device)
    start = lengths.clone()
    size = int(lengths.max()) + max_new_tokens
    ids = torch.full((len(batch), size), tokenizer.pad_token_id, device=batch.input_ids.device)
    mask = torch.zeros_like(ids)
    for row, length in enumerate(lengths.tolist()):
        ids[row, :length] = batch.input_ids[row, :length]
        mask[row, :length] = 1
    rows = torch.arange(len(batch), device=ids.device)
    running = torch.ones(len(batch), dtype=torch.bool, device=ids.device)
    image = features[batch.image]
    for _ in range(max_new_tokens):
        width = int(lengths.max())
        logits = adapter(ids[:, :width], mask[:, :width], image, calibrate)
        token = logits[rows, lengths - 1].argmax(-1)
        running &= token != tokenizer.eos_token_id
        if not bool(running.any()):
            break
        live = rows[running]
        ids[live, lengths[live]] = token[live]
        mask[live, lengths[live]] = 1
        lengths = lengths + running.long()
    texts = [
        tokenizer.decode(ids[row, int(start[row]) : int(lengths[row])], skip_special_tokens=True)
        for row in range(len(batch))
    ]
    return [text.split("\n", 1)[0].strip() for text in texts]


def greedy_answers(
    adapter: MLLMAdapter,
    features: torch.Tensor,
    samples: Samples,
    tokenizer: PreTrainedTokenizerFast,
    calibrate: bool,
    batch_size: int,
    max_new_tokens: int,
) -> list[str]:
    """The greedy answer of every sample, as text, in eval mode and without gradients."""
    if tokenizer.eos_token_id is None or tokenizer.pad_token_id is None:
        raise ValueError("generating answers needs a tokenizer with end-of-sequence and pad tokens")
    adapter.eval()
    answers: list[str] = []
    with torch.no_grad():
        for begin in range(0, len(samples), batch_size):
            batch = samples.take(torch.arange(begin, min(begin + batch_size, len(samples))))
            answers += _greedy_batch(adapter, features, batch, tokenizer, calibrate, max_new_tokens)
    return answers


@dataclass(frozen=True)
class AnswerScorer:
    """Scores a task's samples by `metric` (`scoring.METRICS`) on their greedy answers."""

    metric: str
    tokenizer: PreTrainedTokenizerFast
    max_new_tokens: int

    def __call__(
        self,
        adapter: MLLMAdapter,
        features: torch.Tensor,
        samples: Samples,
        calibrate: bool,
        batch_size: int,
    ) -> np.ndarray:
        """Per sample, the metric of its greedy answer against its reference answers."""
        answers = greedy_answers(
            adapter, features, samples, self.tokenizer, calibrate, batch_size, self.max_new_tokens
        )
        return score_answers(self.metric, answers, samples.references)
