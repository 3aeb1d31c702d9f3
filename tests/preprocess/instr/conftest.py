"""Record files for the instruction-stream tests, written by the tests themselves.

`record` builds a LLaVA-layout record, `write_lines` writes a JSONL file line by line (so a test
knows every record's line), `small_spec` is a SynthCIT spec small enough to build in well under
a second, and `synthcit` is that spec built once per session (tests must not modify it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reprolab.core.io import write_h5
from reprolab.preprocess.instr.synthcit import SynthCITSpec, build_synthcit

SMALL_SPEC = {
    "seed": 3,
    "noise": 20.0,
    "stroke_gain": [0.6, 1.0],
    "align": {"kind": "caption", "n": 40},
    "tasks": [
        {"name": "digit", "kind": "digit_id", "train": 40, "test": 20},
        {"name": "plus", "kind": "arith", "train": 40, "test": 20},
        {"name": "where", "kind": "position", "train": 40, "test": 20},
        {"name": "compare", "kind": "compare", "train": 40, "test": 20},
        {"name": "mixed", "kind": "mixed", "train": 40, "test": 20},
        {"name": "plus2", "kind": "arith", "train": 40, "test": 20},
    ],
}


def record(
    record_id: Any, question: str, answer: str, image: Any = None, **extra: Any
) -> dict[str, Any]:
    """A single-turn record; `image=None` leaves the key out (a text-only record)."""
    obj: dict[str, Any] = {"id": record_id}
    if image is not None:
        obj["image"] = image
    obj["conversations"] = [{"from": "human", "value": question}, {"from": "gpt", "value": answer}]
    return {**obj, **extra}


def write_lines(path: Path, lines: list[Any]) -> Path:
    """One line per item: a dict as JSON, a string as it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines)
    path.write_text(text)
    return path


def write_images_h5(path: Path, count: int = 3) -> np.ndarray:
    """An HDF5 file with dataset `images`, uint8 [count, 4, 5], image i filled with i."""
    images = np.repeat(np.arange(count, dtype=np.uint8), 20).reshape(count, 4, 5)
    write_h5(path, {"images": images})
    return images


@pytest.fixture
def small_spec() -> SynthCITSpec:
    return SynthCITSpec.from_params(SMALL_SPEC)


@pytest.fixture(scope="session")
def synthcit(tmp_path_factory) -> Path:
    """The small spec's stream.yaml, built once."""
    return build_synthcit(SynthCITSpec.from_params(SMALL_SPEC), tmp_path_factory.mktemp("synth"))
