"""A loaded instruction stream as what the study trains on: task tensors and the stream's images.

`load_stream_data` takes a stream read by the instruction family's loader (`load_stream`, the
one a real CoIN / MLLM-CL / UCIT stream goes through; a bad file is refused with its report)
and the model's processor, lists each distinct image once (`vision.StreamImages`, read on
demand by the processor's image processor) and tokenises every split with the processor's
tokenizer. At smoke scale that tokenizer is the word-level one the alignment job builds from
`stream_words` (every word of the stream's prompts and answers, in order of first appearance,
so the ids are the same on every run); at paper scale it is the checkpoint's own. Records must
be single-image and single-turn: the study's model takes one image per sample, and a record
that is not is refused by `tensors.encode_samples` or here, never cut silently.

With params `scoring` (paper scale) every task gets a `generation.AnswerScorer` for the metric
declared for it (`scoring.task_metrics`), and its answers end with the tokenizer's
end-of-sequence token, so the model learns to stop where generation is read. Each sample keeps
its reference answers (`record_references`): the record's `meta.answers` when it carries them
(the ten human answers of VQAv2, VizWiz and TextVQA; a caption's reference captions), else its
gpt answer alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedTokenizerFast

from reprolab.models.tiny_vlm import IMAGE
from reprolab.preprocess.instr.records import Record
from reprolab.preprocess.instr.stream import Stream
from reprolab.studies.vngct.generation import AnswerScorer
from reprolab.studies.vngct.scoring import task_metrics
from reprolab.studies.vngct.tensors import Samples, encode_samples
from reprolab.studies.vngct.vision import StreamImages


@dataclass(frozen=True)
class TaskData:
    """One task's train and test samples, the token ids of its answers (None: multi-token) and
    the scorer of its generated answers (None: no metric declared, answers are ranked)."""

    name: str
    train: Samples
    test: Samples
    choices: torch.Tensor | None
    scorer: AnswerScorer | None


@dataclass(frozen=True)
class StreamData:
    """Everything a run needs from the stream; samples index `images` through `Samples.image`."""

    name: str
    tokenizer: PreTrainedTokenizerFast
    images: StreamImages
    align: Samples | None
    tasks: list[TaskData]


def stream_words(records: Sequence[Record]) -> list[str]:
    """Every whitespace-separated word of the records' turns, in order of first appearance."""
    words: dict[str, None] = {}
    for record in records:
        for _, text in record.conversations:
            words.update((word, None) for word in text.split() if word != IMAGE)
    return list(words)


def _splits(stream: Stream) -> list[tuple[str, list[Record]]]:
    splits = [("align", list(stream.align))] if stream.align else []
    for task in stream.tasks:
        splits += [(f"{task.name}/train", task.train), (f"{task.name}/test", task.test)]
    return splits


def stream_vocabulary(stream: Stream) -> list[str]:
    """`stream_words` of every record of the stream (alignment records first)."""
    return stream_words([record for _, records in _splits(stream) for record in records])


ANSWERS_KEY = "answers"
"""The `meta` key of a record's reference answers."""


def record_references(record: Record, where: str) -> tuple[str, ...]:
    """The reference answers of `record` (module docstring); ValueError naming `where` (file
    and split), the record and the key when `meta.answers` is not a non-empty list of strings."""
    if ANSWERS_KEY not in record.meta:
        return (record.answer,)
    answers = record.meta[ANSWERS_KEY]
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise ValueError(
            f"{where}: record {record.id}: meta.{ANSWERS_KEY} is {answers!r}, expected a "
            "non-empty list of strings (the reference answers)"
        )
    return tuple(answers)


def load_stream_data(
    stream: Stream,
    processor: Any,
    tokens_per_image: int,
    prompt_template: str = "{prompt}",
    scoring: Mapping[str, Any] | None = None,
) -> StreamData:
    """The stream's tasks as tensors for the model of `processor` (see the module docstring).

    `prompt_template` wraps each record's prompt (its ``{prompt}`` field), e.g. LLaVA-1.5's
    ``"USER: {prompt} ASSISTANT:"``. `scoring` is params `vngct.scoring` (None: no task's
    answers are generated).
    """
    if "{prompt}" not in prompt_template:
        raise ValueError(f"prompt template {prompt_template!r} has no {{prompt}} field")
    tokenizer = processor.tokenizer
    slot: dict[str, int] = {}
    for name, records in _splits(stream):
        for record in records:
            if len(record.images) != 1:
                raise ValueError(
                    f"{stream.root}: {name}: record {record.id} has {len(record.images)} "
                    "images; the vngct model takes exactly one per sample"
                )
            slot.setdefault(record.images[0], len(slot))
    images = StreamImages(list(slot), processor.image_processor)
    metrics = {} if scoring is None else task_metrics(scoring, [t.name for t in stream.tasks])
    if metrics and tokenizer.eos_token_id is None:
        raise ValueError("vngct.scoring: generated answers need a tokenizer with an EOS token")

    def encode(records: Sequence[Record], where: str, end_token: int | None = None) -> Samples:
        return encode_samples(
            tokenizer,
            [prompt_template.format(prompt=record.prompt) for record in records],
            [record.answer for record in records],
            [slot[record.images[0]] for record in records],
            [bool(record.visual_needed) for record in records],
            tokens_per_image,
            [record_references(record, f"{stream.root}: {where}") for record in records],
            end_token,
        )

    tasks = []
    for task in stream.tasks:
        scorer = None
        if task.name in metrics:
            scorer = AnswerScorer(metrics[task.name], tokenizer, int(scoring["max_new_tokens"]))
        end = None if scorer is None else tokenizer.eos_token_id
        tasks.append(
            TaskData(
                task.name,
                encode(task.train, f"{task.name}/train", end),
                encode(task.test, f"{task.name}/test", end),
                answer_choices(tokenizer, [r.answer for r in [*task.train, *task.test]]),
                scorer,
            )
        )
    align = encode(stream.align, "align") if stream.align else None
    return StreamData(stream.name, tokenizer, images, align, tasks)


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
