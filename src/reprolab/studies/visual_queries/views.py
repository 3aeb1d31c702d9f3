"""How an item is shown to a model: its visible frames and its options in one mode.

Text mode gives each option as its sentence (`text.state_to_text`); visual mode as an image
of the state (`synth.render_state`) whose jitter, scale and background come from
derive_seed(seed, "option", item id, slot), so every backend sees the same images for an
item and a seed. `Batch` stacks items for the torch models: frames past an item's visible
count are zeroed and masked out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from reprolab.core.determinism import derive_seed
from reprolab.preprocess.video.synth import SceneSpec, render_state
from reprolab.studies.visual_queries.dataset import Corpus
from reprolab.studies.visual_queries.items import Item
from reprolab.studies.visual_queries.text import encode, state_to_text

MODES = ("text", "visual")


def option_texts(item: Item) -> list[str]:
    """The options as sentences."""
    return [state_to_text(state) for state in item.options]


def option_images(item: Item, seed: int, spec: SceneSpec, render: dict[str, Any]) -> np.ndarray:
    """The options as images, uint8 [4, H, W, 3]; `render` holds jitter and scale_jitter."""
    return np.stack(
        [
            render_state(
                state,
                derive_seed(seed, "option", item.id, slot),
                spec,
                jitter=float(render["jitter"]),
                scale_jitter=float(render["scale_jitter"]),
            )
            for slot, state in enumerate(item.options)
        ]
    )


def question_text(item: Item) -> str:
    """The question with its family word in front (one multi-task model answers all three)."""
    return f"{item.family} {item.question}"


@dataclass(frozen=True)
class Batch:
    """A stack of items as tensors: video [B,T,H,W,3], mask [B,T], question ids, options."""

    video: torch.Tensor
    mask: torch.Tensor
    question: torch.Tensor
    options: torch.Tensor
    answer: torch.Tensor
    visual: bool


def make_batch(
    items: Sequence[Item],
    corpus: Corpus,
    visual: bool,
    vocabulary: dict[str, int],
    lengths: dict[str, int],
    seed: int,
    render: dict[str, Any],
    image_cache: dict[str, np.ndarray] | None = None,
) -> Batch:
    """Tensors for `items` in one mode; `lengths` gives the question and option token lengths.

    An item's option images depend only on (seed, item, render), so a caller that batches the
    same items again can pass `image_cache` (item id → images) to draw them once."""
    videos, masks, questions, options = [], [], [], []
    for item in items:
        clip = corpus.clip(item.video).copy()
        mask = np.arange(len(clip)) < item.n_frames
        clip[~mask] = 0
        videos.append(clip)
        masks.append(mask)
        questions.append(encode(question_text(item), vocabulary, lengths["question"]))
        if visual and image_cache is None:
            options.append(option_images(item, seed, corpus.spec, render))
        elif visual:
            if item.id not in image_cache:
                image_cache[item.id] = option_images(item, seed, corpus.spec, render)
            options.append(image_cache[item.id])
        else:
            options.append([encode(t, vocabulary, lengths["option"]) for t in option_texts(item)])
    return Batch(
        video=torch.from_numpy(np.stack(videos)),
        mask=torch.from_numpy(np.stack(masks)),
        question=torch.tensor(questions),
        options=torch.from_numpy(np.asarray(np.stack(options))),
        answer=torch.tensor([item.answer_idx for item in items]),
        visual=visual,
    )
