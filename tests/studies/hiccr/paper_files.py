"""A paper-scale setting in miniature for hiccr's tests: a saved tiny LLaVA checkpoint folder and
small ViRL39K and MathVista files in their released formats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from reprolab.models.tiny_vlm import build_tiny_llava, build_tokenizer, save_tiny_vlm
from tests.studies.hiccr.release_files import mathvista_table, png, virl_table, write_image

TRAIN_ITEMS = 8
TEST_ITEMS = 4


def write_checkpoint(folder: Path) -> Path:
    """A seeded tiny LLaVA with its processor (16×16 images, 4 image tokens) saved in `folder`,
    as a released checkpoint folder is."""
    tokenizer = build_tokenizer(["how", "many", "boxed", "value"])
    model, processor = build_tiny_llava(
        tokenizer, seed=0, image_size=16, patch_size=8, hidden=32, layers=2, heads=2
    )
    return save_tiny_vlm(model, processor, folder)


def write_virl39k(folder: Path) -> Path:
    """A ViRL39K release of `TRAIN_ITEMS` one-image items (images under `images/`) plus one
    two-image item, which the reader leaves out."""
    rows = []
    for index in range(TRAIN_ITEMS):
        write_image(folder, f"{index}.png", 20 * index)
        question = "<image>How many?" if index % 2 else "<image>What value?"
        answer = f"\\boxed{{{index}}}"
        rows.append(
            {
                "qid": f"q{index}",
                "question": question,
                "answer": answer,
                "image": [f"images/{index}.png"],
            }
        )
    rows.append(
        {
            "qid": "two",
            "question": "<image><image>Both?",
            "answer": "\\boxed{1}",
            "image": ["images/0.png", "images/1.png"],
        }
    )
    path = folder / "39Krelease.parquet"
    pq.write_table(virl_table(rows), path)
    return path


def write_mathvista(folder: Path) -> Path:
    """A MathVista testmini file of `TEST_ITEMS` items: free-form and multiple choice."""
    rows = []
    for index in range(TEST_ITEMS):
        row: dict[str, Any] = {
            "pid": str(index + 1),
            "question": "How many?",
            "image": f"images/{index + 1}.jpg",
            "decoded_image": {"bytes": png(40 * index), "path": f"{index + 1}.jpg"},
            "answer": str(index),
            "answer_type": "integer",
            "query": f"Hint: answer with an integer.\nQuestion: How many? ({index})",
        }
        if index % 2:
            row |= {"choices": ["1", "3"], "answer": "3", "question_type": "multi_choice"}
        rows.append(row)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "testmini.parquet"
    pq.write_table(mathvista_table(rows), path)
    return path


def paper_params(base: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`base` (the smoke-like test params) switched to the released files and a checkpoint
    written under `folder`, with LoRA adapters, as params.yaml's paper scale is."""
    folder.mkdir(parents=True, exist_ok=True)
    return {
        **base,
        "checkpoint": str(write_checkpoint(folder / "checkpoint")),
        "prompt": "USER: {image}\n{question} ASSISTANT:",
        "benchmarks": {
            "train": str(write_virl39k(folder / "virl")),
            "images": str(folder / "virl"),
            "test": str(write_mathvista(folder / "mathvista")),
            "gate_items": 3,
            "max_new_tokens": 6,
        },
        "runtime": {"device": "cpu", "dtype": "float32"},
        "lora": {"rank": 2, "alpha": 4.0, "dropout": 0.0, "targets": ["q_proj", "v_proj"]},
    }
