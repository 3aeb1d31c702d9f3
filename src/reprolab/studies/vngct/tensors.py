"""Single-turn instruction records as padded token tensors with answer labels.

A sample is ``<s> prompt answer``: the prompt's ``<image>`` placeholder becomes as many image
tokens as the vision tower gives per image, the answer (the last ``gpt`` turn, with a leading
space) is what the loss and exact match look at. Sequences are right-padded; `labels` holds
each answer token id at the position that predicts it (the one before it) and -100 elsewhere,
so ``logits[:, p]`` is scored against ``labels[:, p]`` without shifting. With `end_token` (a
task whose answers are generated and scored, `generation`) the answer is followed by that
token, so the model learns where an answer ends. Each sample keeps its reference answers, the
texts a generated answer is scored against (`scoring`).

Choices: one image per sample (the smoke stream has exactly one; multi-image records are
refused, not silently cut); pixel values come from the model's own image processor
(`vision.StreamImages`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from transformers import PreTrainedTokenizerFast

from reprolab.models.tiny_vlm import IMAGE

IGNORE = -100


@dataclass(frozen=True)
class Samples:
    """Tokenised samples of one task split; `image` indexes the stream's feature array."""

    input_ids: torch.Tensor  # [N, T] long
    attention_mask: torch.Tensor  # [N, T] long
    labels: torch.Tensor  # [N, T] long, answer token ids at predicting positions, else -100
    image: torch.Tensor  # [N] long
    visual_needed: torch.Tensor  # [N] bool (generator ground truth; False where unknown)
    references: tuple[tuple[str, ...], ...]  # [N] reference answers

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def to(self, device: torch.device | str) -> Samples:
        """The samples with the tensors the model reads on `device`; `image` and the labels of
        `visual_needed` stay on the CPU (they index features and count routing there)."""
        return Samples(
            self.input_ids.to(device),
            self.attention_mask.to(device),
            self.labels.to(device),
            self.image,
            self.visual_needed,
            self.references,
        )

    def take(self, rows: torch.Tensor) -> Samples:
        """The samples at `rows`, trimmed to the longest of them."""
        length = int(self.attention_mask[rows].sum(1).max())
        return Samples(
            self.input_ids[rows, :length],
            self.attention_mask[rows, :length],
            self.labels[rows, :length],
            self.image[rows],
            self.visual_needed[rows],
            tuple(self.references[row] for row in rows.tolist()),
        )


def encode_samples(
    tokenizer: PreTrainedTokenizerFast,
    prompts: Sequence[str],
    answers: Sequence[str],
    image_index: Sequence[int],
    visual_needed: Sequence[bool],
    tokens_per_image: int,
    references: Sequence[Sequence[str]] | None = None,
    end_token: int | None = None,
) -> Samples:
    """Tokenise (prompt, answer) pairs, expanding each prompt's single ``<image>``.

    `references` are each sample's reference answers (None: its answer alone); `end_token`
    (None: nothing) follows every answer.
    """
    reference_sets = (
        tuple((a,) for a in answers) if references is None else tuple(map(tuple, references))
    )
    if len(reference_sets) != len(answers):
        raise ValueError(f"{len(reference_sets)} reference sets for {len(answers)} answers")
    image_id = tokenizer.convert_tokens_to_ids(IMAGE)
    rows: list[tuple[list[int], int]] = []
    for number, (prompt, answer) in enumerate(zip(prompts, answers, strict=True)):
        ids = tokenizer(prompt).input_ids
        if ids.count(image_id) != 1:
            raise ValueError(
                f"sample {number}: prompt {prompt!r} has {ids.count(image_id)} {IMAGE} "
                "placeholders, expected exactly 1"
            )
        answer_ids = tokenizer(" " + answer, add_special_tokens=False).input_ids
        if tokenizer.unk_token_id in answer_ids:
            raise ValueError(f"sample {number}: answer {answer!r} has words outside the vocabulary")
        if end_token is not None:
            answer_ids.append(end_token)
        at = ids.index(image_id)
        ids = ids[:at] + [image_id] * tokens_per_image + ids[at + 1 :]
        rows.append((ids + answer_ids, len(answer_ids)))
    length = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), length), tokenizer.pad_token_id, dtype=torch.long)
    attention = torch.zeros((len(rows), length), dtype=torch.long)
    labels = torch.full((len(rows), length), IGNORE, dtype=torch.long)
    for row, (ids, n_answer) in enumerate(rows):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        attention[row, : len(ids)] = 1
        start = len(ids) - n_answer
        labels[row, start - 1 : len(ids) - 1] = torch.tensor(ids[start:])
    return Samples(
        input_ids,
        attention,
        labels,
        torch.as_tensor(np.asarray(image_index, dtype=np.int64)),
        torch.as_tensor(np.asarray(visual_needed, dtype=bool)),
        reference_sets,
    )


def answer_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-sample mean cross-entropy over the answer tokens, ``[B]`` (nats/token)."""
    token_loss = F.cross_entropy(
        logits.transpose(1, 2), labels, ignore_index=IGNORE, reduction="none"
    )
    counts = (labels != IGNORE).sum(1).clamp(min=1)
    return token_loss.sum(1) / counts


def exact_match(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``[B]`` bool: every answer token is the model's greedy choice (teacher-forced)."""
    answer = labels != IGNORE
    correct = (logits.argmax(-1) == labels) | ~answer
    return correct.all(1)


def ranked_match(logits: torch.Tensor, labels: torch.Tensor, choices: torch.Tensor) -> torch.Tensor:
    """``[B]`` bool: at the first answer position, the answer beats every other of `choices`."""
    first = (labels != IGNORE).int().argmax(1)
    rows = torch.arange(labels.shape[0], device=labels.device)
    choices = choices.to(logits.device)
    scores = logits[rows, first][:, choices]
    return choices[scores.argmax(-1)] == labels[rows, first]
