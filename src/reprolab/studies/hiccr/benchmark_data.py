"""hiccr's paper-scale splits, from the released benchmark files (params `benchmarks`).

* RL prompts and gate items: ViRL39K (`train`, its images under `images`), the RL training set
  of the paper's setting. `gate_items` of its items, drawn by the warm start's seed, are held out
  as the gate items (the warm start's gates and the tuning score, never trained on); the rest
  are the RL prompts.
* Test items: MathVista testmini (`test`), scored by the verifiable reward, as every column of
  the table is.
* No demonstrations: the released instruction-tuned checkpoint is the warm start.

Choices: a response earns the reward when the content of its last `\\boxed{}` is the reference
answer (`answers.is_correct`: choice letters, numbers at the released precision); the reference
response the grounding metrics teacher-force is that answer boxed, and they are measured at
every one of its tokens (`Split.reading` None: a real item's answer does not say which of its
tokens are read from the image). Images stay encoded in memory and are decoded and prepared by
the checkpoint's image processor batch by batch (`DecodedImages`): ViRL39K's 39k images as
336×336 float tensors would take about 50 GB.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from PIL import Image

from reprolab.core.determinism import derive_seed
from reprolab.models.tiny_vlm import IMAGE
from reprolab.studies.hiccr.answers import is_correct
from reprolab.studies.hiccr.benchmarks import BenchmarkItem, read_mathvista, read_virl39k
from reprolab.studies.hiccr.data import Split, Splits


class DecodedImages:
    """Model-ready pixels [n, 3, H, W] of encoded images, prepared on demand by a `transformers`
    image processor. Indexed like a tensor's first dimension by a slice or index tensor."""

    def __init__(self, images: Sequence[bytes], image_processor: Any) -> None:
        self.images = list(images)
        self.image_processor = image_processor

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: Any) -> torch.Tensor:
        positions = torch.arange(len(self.images))[index].reshape(-1).tolist()
        pictures = [Image.open(io.BytesIO(self.images[i])).convert("RGB") for i in positions]
        if not pictures:
            raise IndexError(f"no images at {index!r} of {len(self.images)}")
        return self.image_processor(images=pictures, return_tensors="pt").pixel_values


def boxed_reference(answer: str) -> str:
    """The reference response of an answer: the answer in `\\boxed{}`, what the reward reads."""
    return f"\\boxed{{{answer}}}"


def question_text(question: str) -> str:
    """A released question without its `<image>` placeholders (ViRL39K writes one where the
    image goes): the prompt template places the image tokens itself."""
    return question.replace(IMAGE, "").strip()


def benchmark_split(items: Sequence[BenchmarkItem], image_processor: Any) -> Split:
    """A split of benchmark items: their questions, boxed reference answers, the items
    themselves as references of `answers.is_correct`, every answer token read."""
    return Split(
        DecodedImages([item.image for item in items], image_processor),
        [question_text(item.question) for item in items],
        [boxed_reference(item.answer) for item in items],
        list(items),
        is_correct,
        reading=None,
    )


def load_benchmarks(spec: Mapping[str, Any], seed: int, image_processor: Any) -> Splits:
    """The splits of the module docstring from params `benchmarks` (`train`, `images`, `test`,
    `gate_items`); the gate items are drawn by `seed`. A ValueError names `gate_items` when the
    training file holds too few items to leave RL prompts."""
    train, skipped = read_virl39k(spec["train"], spec.get("images"))
    test, _ = read_mathvista(spec["test"])
    count = int(spec["gate_items"])
    if count >= len(train):
        raise ValueError(
            f"hiccr.benchmarks.gate_items: {count} of the {len(train)} usable items of "
            f"{spec['train']} ({len(skipped)} skipped) leaves no RL prompts"
        )
    order = np.random.default_rng(derive_seed(seed, "hiccr", "gate")).permutation(len(train))
    gate = sorted(order[:count].tolist())
    rest = sorted(order[count:].tolist())
    return Splits(
        sft=benchmark_split([], image_processor),
        gate=benchmark_split([train[i] for i in gate], image_processor),
        rl=benchmark_split([train[i] for i in rest], image_processor),
        test=benchmark_split(test, image_processor),
    )
