"""The items hiccr trains and measures on: images as model inputs, questions, answers as token
ids, and the check that makes a reward verifiable.

A `Split` is one set of items, whatever their source: the VisArith stream at smoke and ci scale
(`load_visarith`), released benchmark files at paper scale (`studies.hiccr.benchmark_data`). Its
`references` and `verify` make the reward: `verify(response text, reference)`. Its `reading`
names the answer tokens the grounding metrics are measured at (VisArith: the digits read from
the image; None: every token of the reference answer). Its `pixels` is anything indexable by
item (a tensor, or images decoded on demand where a whole split would not fit in memory).

The VisArith stream is read by the instruction family's loader (`load_stream`), the one a real
stream goes through. Its task `sft` holds the supervised warm start's demonstrations (train) and the
items its gates are measured on (test); its task `rl` holds the RL prompts (train) and the test
items every table column is measured on (test). A record's reference is its gpt answer; the
reward reads the conclusion of a generated answer and compares it with the reference's.

Choices: images are the stream's uint8 grey canvases, scaled to [-1, 1] and repeated over three
channels, which is what the tiny LLaVA's processor (mean = std = 0.5, no resizing at the
native size) gives, done here once for the whole split. Demonstrations are tokenised by the
policy's tokenizer with a leading space (the word-level tokenizer's word-after-space pieces,
as answers follow the prompt) and end with the end-of-sequence token; every VisArith answer has
the same number of tokens, so the response length is fixed and nothing is padded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from transformers import PreTrainedTokenizerFast

from reprolab.models.tiny_vlm import IMAGE
from reprolab.preprocess.instr.images import ImageLoader
from reprolab.preprocess.instr.records import Record
from reprolab.preprocess.instr.stream import Stream
from reprolab.preprocess.instr.visarith import N_DIGITS, PROMPT, parse_chain

TASKS = ("sft", "rl")
READING = slice(1, 1 + N_DIGITS)
"""Positions of the reading tokens in a VisArith answer: `see` then the four digits."""
PROMPT_TEMPLATE = "{image}\n{question}"
"""The prompt of the tiny LLaVA: its image places, a new line, the request (params `prompt`)."""
CONCLUSION = re.compile(r"(?:^|\s)so\s+(\d)\s*$")
"""A VisArith response's closing `so <digit>`."""


class Pixels(Protocol):
    """Model-ready images [n, 3, H, W] by item: a tensor, or a source decoding them on demand."""

    def __getitem__(self, index: Any) -> torch.Tensor: ...

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class Split:
    """Items of one split: images, the question asked about each, the reference answer (what
    the warm start imitates and the grounding metrics teacher-force), the reference a response
    is verified against, and how (module docstring)."""

    pixels: Pixels
    questions: list[str]
    answers: list[str]
    references: list[Any]
    verify: Callable[[str, Any], bool]
    reading: slice | None

    def __len__(self) -> int:
        return len(self.answers)

    def subset(self, indices: Sequence[int]) -> Split:
        """The items at `indices`, in that order."""
        index = torch.as_tensor(list(indices), dtype=torch.long)
        pick = index.tolist()
        return Split(
            self.pixels[index],
            [self.questions[i] for i in pick],
            [self.answers[i] for i in pick],
            [self.references[i] for i in pick],
            self.verify,
            self.reading,
        )


def question_groups(questions: Sequence[str], indices: Sequence[int]) -> list[list[int]]:
    """`indices` grouped by their question (`questions[i]`), in order of first appearance and
    keeping their order inside a group: the items one prompt layout serves in one batch."""
    groups: dict[str, list[int]] = {}
    for index in indices:
        groups.setdefault(questions[index], []).append(index)
    return list(groups.values())


def conclusion(text: str) -> int | None:
    """The answer a VisArith response concludes with: the digit of its closing `so <digit>`,
    None when it does not end that way. Only the conclusion is verified, as RLVR extracts a
    final answer and ignores the working: a chain with a slip in it still earns the reward when
    its conclusion is right (and a strict format check would leave almost every rollout
    sampled at temperature 1 unrewarded)."""
    match = CONCLUSION.search(text)
    return None if match is None else int(match.group(1))


def concludes_with(text: str, reference: int) -> bool:
    """VisArith's verifier: the response concludes with the reference digit."""
    return conclusion(text) == reference


@dataclass(frozen=True)
class Splits:
    """The four splits the study uses: SFT demonstrations and gate items, RL prompts and test."""

    sft: Split
    gate: Split
    rl: Split
    test: Split


def pixel_values(images: np.ndarray) -> torch.Tensor:
    """[N, 3, H, W] float32 in [-1, 1] from uint8 grey images [N, H, W]."""
    if images.dtype != np.uint8 or images.ndim != 3:
        raise ValueError(f"images of {images.dtype} {images.shape}: expected uint8 [N, H, W]")
    grey = torch.from_numpy(images.astype(np.float32)) / 127.5 - 1.0
    return grey[:, None].expand(-1, 3, -1, -1).contiguous()


def _split(records: Sequence[Record], loader: ImageLoader, where: str) -> Split:
    conclusions: list[Any] = []
    for record in records:
        parsed = parse_chain(record.answer)
        if parsed is None:
            raise ValueError(f"{where} record {record.id}: its answer is not a VisArith chain")
        if len(record.images) != 1:
            raise ValueError(f"{where} record {record.id}: expected one image")
        conclusions.append(parsed.final)
    images = np.stack(loader.load_many([record.images[0] for record in records]))
    answers = [record.answer for record in records]
    questions = [PROMPT] * len(records)
    return Split(pixel_values(images), questions, answers, conclusions, concludes_with, READING)


def load_visarith(stream: Stream) -> Splits:
    """The study's splits from a loaded VisArith stream (tasks `sft` and `rl`)."""
    tasks = {task.name: task for task in stream.tasks}
    missing = [name for name in TASKS if name not in tasks]
    if missing:
        raise ValueError(f"stream {stream.name}: tasks {missing} missing (has {sorted(tasks)})")
    with ImageLoader() as loader:
        return Splits(
            sft=_split(tasks["sft"].train, loader, "sft/train"),
            gate=_split(tasks["sft"].test, loader, "sft/test"),
            rl=_split(tasks["rl"].train, loader, "rl/train"),
            test=_split(tasks["rl"].test, loader, "rl/test"),
        )


def prompt_ids(
    tokenizer: PreTrainedTokenizerFast,
    image_tokens: int,
    question: str = PROMPT,
    template: str = PROMPT_TEMPLATE,
) -> torch.Tensor:
    """[P] ids of the prompt `template` with `image_tokens` image places at `{image}` and
    `question` at `{question}`, after the tokenizer's beginning of sequence."""
    text = template.format(image=IMAGE * image_tokens, question=question)
    return torch.tensor(tokenizer(text).input_ids)


def answer_ids(
    tokenizer: PreTrainedTokenizerFast, answers: Sequence[str], pad: bool = False
) -> torch.Tensor:
    """[N, T] ids of `answers` (after a space) followed by the end token; all of one length, or
    with `pad` the shorter ones filled with further end tokens."""
    end = tokenizer.eos_token_id
    rows = [
        tokenizer(" " + answer, add_special_tokens=False).input_ids + [end] for answer in answers
    ]
    lengths = {len(row) for row in rows}
    if pad:
        return torch.tensor([row + [end] * (max(lengths) - len(row)) for row in rows])
    if len(lengths) != 1:
        raise ValueError(f"answers tokenise to {sorted(lengths)} tokens: expected one length")
    return torch.tensor(rows)
