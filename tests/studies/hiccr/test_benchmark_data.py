"""hiccr's paper-scale splits from small ViRL39K and MathVista files in their released formats."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import LlavaProcessor

from reprolab.studies.hiccr.benchmark_data import DecodedImages, load_benchmarks
from tests.studies.hiccr.paper_files import (
    TEST_ITEMS,
    TRAIN_ITEMS,
    write_checkpoint,
    write_mathvista,
    write_virl39k,
)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("released")
    processor = LlavaProcessor.from_pretrained(write_checkpoint(folder / "checkpoint"))
    spec = {
        "train": str(write_virl39k(folder / "virl")),
        "test": str(write_mathvista(folder / "mathvista")),
        "gate_items": 3,
        "max_new_tokens": 6,
    }
    return {"spec": spec, "image_processor": processor.image_processor}


def test_gate_items_are_held_out_of_the_rl_prompts_by_the_seed(files):
    splits = load_benchmarks(files["spec"], 0, files["image_processor"])
    gate = {item.id for item in splits.gate.references}
    prompts = {item.id for item in splits.rl.references}
    assert len(gate) == 3 and not gate & prompts
    assert gate | prompts == {f"q{i}" for i in range(TRAIN_ITEMS)}  # the two-image item is out
    assert len(splits.sft) == 0 and len(splits.test) == TEST_ITEMS
    again = load_benchmarks(files["spec"], 0, files["image_processor"])
    assert [item.id for item in again.gate.references] == [
        item.id for item in splits.gate.references
    ]
    other_draws = {
        tuple(
            item.id
            for item in load_benchmarks(
                files["spec"], seed, files["image_processor"]
            ).gate.references
        )
        for seed in range(1, 6)
    }
    assert len(other_draws) > 1


def test_items_are_prompts_without_placeholders_and_boxed_references_the_reward_accepts(files):
    splits = load_benchmarks(files["spec"], 0, files["image_processor"])
    rl = splits.rl
    assert all("<image>" not in question for question in rl.questions)
    assert rl.reading is None
    for answer, item in zip(rl.answers, rl.references, strict=True):
        assert answer == f"\\boxed{{{item.answer}}}"
        assert rl.verify(f"so the answer is {answer}", item)
        assert not rl.verify(f"\\boxed{{{item.answer}1}}", item)
    choice = splits.test.references[1]
    assert choice.choices == ("1", "3") and splits.test.verify("\\boxed{B}", choice)
    assert splits.test.questions[1].startswith("Hint:")  # MathVista's released query


def test_images_are_decoded_and_prepared_batch_by_batch(files):
    splits = load_benchmarks(files["spec"], 0, files["image_processor"])
    pixels = splits.test.pixels
    assert isinstance(pixels, DecodedImages) and len(pixels) == TEST_ITEMS
    batch = pixels[torch.tensor([2, 0])]
    assert batch.shape == (2, 3, 16, 16) and batch.dtype == torch.float32
    assert torch.equal(pixels[0:1][0], batch[1]) and not torch.equal(batch[0], batch[1])
    subset = splits.test.subset([3, 1])
    assert torch.equal(subset.pixels[0:1], pixels[3:4])
    assert [item.id for item in subset.references] == ["4", "2"]


def test_too_many_gate_items_is_refused_naming_the_key(files, tmp_path: Path):
    spec = {**files["spec"], "gate_items": TRAIN_ITEMS}
    with pytest.raises(ValueError, match=r"hiccr.benchmarks.gate_items: 8 of the 8 usable items"):
        load_benchmarks(spec, 0, files["image_processor"])
