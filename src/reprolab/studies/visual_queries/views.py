"""How an item is shown to a model: its question and its options in one mode (numpy only).

Text mode gives each option as its sentence (`text.state_to_text`); visual mode as an image
of the state (`synth.render_state`) whose jitter, scale and background come from
derive_seed(seed, "option", item id, slot), so every backend sees the same images for an
item and a seed. The report draws its examples with these functions, so this module loads no
torch; `tinyvlm.make_batch` stacks items into tensors for the torch models.

`Renders` keeps what one seed's training and answering draw without depending on a tuned
value, so a tuning job draws it once for every grid point: each item's option images and
TinyVLM's alignment batches. A table run draws everything once anyway and passes none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.preprocess.video.synth import SceneSpec, render_state
from reprolab.studies.visual_queries.items import Item
from reprolab.studies.visual_queries.text import state_to_text


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


@dataclass
class Renders:
    """Draws of one seed and render setting kept for reuse (see the module docstring):
    `option_images` by item id, `align` TinyVLM's alignment batches (`tinyvlm.align_batches`)
    once drawn."""

    option_images: dict[str, np.ndarray] = field(default_factory=dict)
    align: list[Any] = field(default_factory=list)


def cached_option_images(
    item: Item,
    seed: int,
    spec: SceneSpec,
    render: dict[str, Any],
    cache: dict[str, np.ndarray] | None,
) -> np.ndarray:
    """`option_images`, kept in `cache` (item id -> images, one seed and render setting per
    cache) and taken from it when the item was drawn before; drawn anew without a cache."""
    if cache is None:
        return option_images(item, seed, spec, render)
    if item.id not in cache:
        cache[item.id] = option_images(item, seed, spec, render)
    return cache[item.id]


def question_text(item: Item) -> str:
    """The question with its family word in front (one multi-task model answers all three)."""
    return f"{item.family} {item.question}"
