"""The VisArith stream as what hiccr trains on: images as model inputs, answers as token ids.

The stream is read by the instruction family's loader (`load_stream`), the one a real stream
goes through. Its task `sft` holds the supervised warm start's demonstrations (train) and the
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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from transformers import PreTrainedTokenizerFast

from reprolab.models.tiny_vlm import IMAGE
from reprolab.preprocess.instr.images import ImageLoader
from reprolab.preprocess.instr.records import Record
from reprolab.preprocess.instr.stream import Stream
from reprolab.preprocess.instr.visarith import PROMPT, parse_chain

TASKS = ("sft", "rl")


@dataclass(frozen=True)
class Split:
    """Items of one split: model-ready images [N, 3, H, W], reference answers and conclusions."""

    pixels: torch.Tensor
    answers: list[str]
    conclusions: list[int]

    def __len__(self) -> int:
        return len(self.answers)


@dataclass(frozen=True)
class VisArithData:
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
    conclusions = []
    for record in records:
        parsed = parse_chain(record.answer)
        if parsed is None:
            raise ValueError(f"{where} record {record.id}: its answer is not a VisArith chain")
        if len(record.images) != 1:
            raise ValueError(f"{where} record {record.id}: expected one image")
        conclusions.append(parsed.final)
    images = np.stack(loader.load_many([record.images[0] for record in records]))
    return Split(pixel_values(images), [record.answer for record in records], conclusions)


def load_visarith(stream: Stream) -> VisArithData:
    """The study's splits from a loaded VisArith stream (tasks `sft` and `rl`)."""
    tasks = {task.name: task for task in stream.tasks}
    missing = [name for name in TASKS if name not in tasks]
    if missing:
        raise ValueError(f"stream {stream.name}: tasks {missing} missing (has {sorted(tasks)})")
    with ImageLoader() as loader:
        return VisArithData(
            sft=_split(tasks["sft"].train, loader, "sft/train"),
            gate=_split(tasks["sft"].test, loader, "sft/test"),
            rl=_split(tasks["rl"].train, loader, "rl/train"),
            test=_split(tasks["rl"].test, loader, "rl/test"),
        )


def prompt_ids(tokenizer: PreTrainedTokenizerFast, image_tokens: int) -> torch.Tensor:
    """[P] ids of the prompt: beginning of sequence, `image_tokens` image places, the request."""
    return torch.tensor(tokenizer(IMAGE * image_tokens + "\n" + PROMPT).input_ids)


def answer_ids(tokenizer: PreTrainedTokenizerFast, answers: Sequence[str]) -> torch.Tensor:
    """[N, T] ids of `answers` (after a space) followed by the end token; all of one length."""
    rows = [
        tokenizer(" " + answer, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
        for answer in answers
    ]
    lengths = {len(row) for row in rows}
    if len(lengths) != 1:
        raise ValueError(f"answers tokenise to {sorted(lengths)} tokens: expected one length")
    return torch.tensor(rows)
