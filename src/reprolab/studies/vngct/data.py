"""A loaded instruction stream as what the study trains on: a tokenizer, pixels and task tensors.

`load_stream_data` reads a `stream.yaml` through the instruction family's loader (the one a
real CoIN / MLLM-CL / UCIT stream goes through; a bad file is refused with its report), builds
a word-level tokenizer knowing every word of the stream's prompts and answers (in order of
first appearance, so the ids are the same on every run), loads each distinct image once and
tokenises every split. Records must be single-image and single-turn: the study's model takes
one image per sample, and a record that is not is refused by `tensors.encode_samples` or here,
never cut silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedTokenizerFast

from reprolab.models.tiny_vlm import IMAGE, build_tokenizer
from reprolab.preprocess.instr.images import ImageLoader
from reprolab.preprocess.instr.records import Record
from reprolab.preprocess.instr.stream import load_stream
from reprolab.studies.vngct.tensors import Samples, encode_samples, pixel_values


@dataclass(frozen=True)
class TaskData:
    """One task's train and test samples and the token ids of its answers (None: multi-token)."""

    name: str
    train: Samples
    test: Samples
    choices: torch.Tensor | None


@dataclass(frozen=True)
class StreamData:
    """Everything a run needs from the stream; samples index `pixels` through `Samples.image`."""

    name: str
    tokenizer: PreTrainedTokenizerFast
    pixels: torch.Tensor  # [N, 3, H, W]
    align: Samples | None
    tasks: list[TaskData]


def stream_words(records: Sequence[Record]) -> list[str]:
    """Every whitespace-separated word of the records' turns, in order of first appearance."""
    words: dict[str, None] = {}
    for record in records:
        for _, text in record.conversations:
            words.update((word, None) for word in text.split() if word != IMAGE)
    return list(words)


def load_stream_data(stream_yaml: str | Path, tokens_per_image: int) -> StreamData:
    """Load `stream_yaml` into tensors (see the module docstring)."""
    stream = load_stream(stream_yaml)
    splits = [("align", stream.align)] if stream.align else []
    for task in stream.tasks:
        splits += [(f"{task.name}/train", task.train), (f"{task.name}/test", task.test)]
    every_record = [record for _, records in splits for record in records]
    tokenizer = build_tokenizer(stream_words(every_record))
    slot: dict[str, int] = {}
    for name, records in splits:
        for record in records:
            if len(record.images) != 1:
                raise ValueError(
                    f"{stream_yaml}: {name}: record {record.id} has {len(record.images)} images; "
                    "the vngct model takes exactly one per sample"
                )
            slot.setdefault(record.images[0], len(slot))
    with ImageLoader() as loader:
        images = loader.load_many(list(slot))
    for reference, image in zip(slot, images, strict=True):
        if image.shape != images[0].shape:
            raise ValueError(
                f"{stream_yaml}: image {reference} is {image.shape}, the first one "
                f"{images[0].shape}; the vngct model takes images of one size"
            )
    pixels = pixel_values(np.stack(images))

    def encode(records: Sequence[Record]) -> Samples:
        return encode_samples(
            tokenizer,
            [record.prompt for record in records],
            [record.answer for record in records],
            [slot[record.images[0]] for record in records],
            [bool(record.visual_needed) for record in records],
            tokens_per_image,
        )

    tasks = [
        TaskData(
            task.name,
            encode(task.train),
            encode(task.test),
            answer_choices(tokenizer, [r.answer for r in [*task.train, *task.test]]),
        )
        for task in stream.tasks
    ]
    return StreamData(
        stream.name, tokenizer, pixels, encode(stream.align) if stream.align else None, tasks
    )


def answer_choices(
    tokenizer: PreTrainedTokenizerFast, answers: Sequence[str]
) -> torch.Tensor | None:
    """Sorted token ids of the distinct answers, or None when one takes more than one token."""
    ids = set()
    for answer in set(answers):
        pieces = tokenizer(" " + answer, add_special_tokens=False).input_ids
        if len(pieces) != 1:
            return None
        ids.add(pieces[0])
    return torch.tensor(sorted(ids), dtype=torch.long)
