"""hiccr's view of the VisArith stream: splits, model-ready images, prompt and answer ids."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from reprolab.preprocess.instr.stream import load_stream
from reprolab.preprocess.instr.visarith import chain_result
from reprolab.studies.hiccr.data import answer_ids, load_visarith, pixel_values, prompt_ids


def test_splits_hold_every_record_with_its_conclusion(stream_path, visarith):
    stream = load_stream(stream_path)
    tasks = {task.name: task for task in stream.tasks}
    assert [len(s) for s in (visarith.sft, visarith.gate, visarith.rl, visarith.test)] == [
        24,
        6,
        8,
        10,
    ]
    for record, conclusion in zip(tasks["rl"].test, visarith.test.references, strict=True):
        assert conclusion == chain_result(record.meta["digits"])
    assert visarith.sft.pixels.shape == (24, 3, 16, 16)


def test_pixel_values_map_grey_levels_onto_minus_one_to_one_in_three_channels():
    images = np.array([[[0, 255], [127, 128]]], dtype=np.uint8)
    pixels = pixel_values(images)
    assert pixels.shape == (1, 3, 2, 2)
    assert torch.equal(pixels[0, 0], pixels[0, 2])
    assert pixels.min() == -1.0 and pixels.max() == 1.0
    with pytest.raises(ValueError, match="uint8"):
        pixel_values(images.astype(np.float32))


def test_prompt_and_answers_tokenise_without_unknown_pieces(tokenizer, visarith):
    prompt = prompt_ids(tokenizer, 4)
    assert int((prompt == tokenizer.convert_tokens_to_ids("<image>")).sum()) == 4
    answers = answer_ids(tokenizer, visarith.sft.answers)
    assert answers.shape == (24, 27)
    assert not (answers == tokenizer.unk_token_id).any()
    assert torch.equal(answers[:, -1], torch.full((24,), tokenizer.eos_token_id))
    decoded = tokenizer.decode(answers[0, :-1].tolist()).strip()
    assert decoded == visarith.sft.answers[0]
    with pytest.raises(ValueError, match="one length"):
        answer_ids(tokenizer, ["see 1", "see 1 2"])


def test_a_stream_without_the_studys_tasks_or_with_foreign_answers_is_refused(stream_path):
    stream = load_stream(stream_path)
    only_sft = dataclasses.replace(stream, tasks=[t for t in stream.tasks if t.name == "sft"])
    with pytest.raises(ValueError, match=r"\['rl'\] missing"):
        load_visarith(only_sft)
    task = stream.tasks[0]
    record = task.train[0]
    bad = dataclasses.replace(record, conversations=(record.conversations[0], ("gpt", "seven")))
    broken = dataclasses.replace(task, train=[bad, *task.train[1:]])
    with pytest.raises(ValueError, match=f"sft/train record {record.id}"):
        load_visarith(dataclasses.replace(stream, tasks=[broken, *stream.tasks[1:]]))
