"""How the real datasets' items are shown (paper scale): CLEVRER states as sentences and as
floor maps, Something-Something v2 templates as sentences (numpy only).

A CLEVRER state holds (object id, look, floor cell) per object in view (`clevrer.state_at`).
What a view shows drops the object id (ids are keys, nothing on screen names them):

- text: one clause per object, "red metal cube at x1 y3", clauses sorted by their words (so
  the order never follows the ids) and joined by " ; ". `x` counts floor columns along world
  x, `y` floor rows along world y, 1 to 3 (`clevrer.cell_of`); the annotation has no camera,
  so these are floor coordinates, not screen places. `parse_text` reads a sentence back into
  the id-free scene (`scene_key`), which the oracle compares with the truth's.
- visual: a top-down floor map (`floor_map`), the 3 x 3 floor grid drawn on a grey floor, each
  object at its cell's centre in its colour: a cube as a square, a sphere as a disc, a
  cylinder as a disc with a dark rim; a metal object has a white highlight at its centre.
  Objects that share a cell sit apart around its centre. Jitter and size come from
  derive_seed(seed, "option", item id, slot) as the sprite renders do. It is a schematic of
  the same state the sentence names, not a camera frame: no image of another video's layout
  worn by this video's objects exists, so neither mode shows the camera's view.

An SSv2 option is the state ``((0, class_index, 0),)`` (`ssv2_items.template_state`); its only
view is the template sentence without objects ("Putting something into something"), read
back through the labels file. There is no image view (`ssv2_items`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.preprocess.video.synth import GRID, State
from reprolab.studies.visual_queries.clevrer import APPEARANCES
from reprolab.studies.visual_queries.items import Item

SEPARATOR = ";"
COLOUR_RGB = {
    "gray": (128, 128, 128),
    "red": (173, 35, 35),
    "blue": (42, 75, 215),
    "green": (29, 105, 20),
    "brown": (129, 74, 25),
    "cyan": (41, 208, 208),
    "purple": (129, 38, 192),
    "yellow": (255, 238, 51),
}
"""CLEVR's colour palette (RGB)."""
FLOOR_GREY = 200
LINE_GREY = 150
BASE_SIZE = 32.0
"""The sprite frame size the render jitter (px) is given for; a floor map scales it."""

Key = tuple[tuple[int, ...], ...]
"""An id-free scene: what a view shows, comparable across options."""


def cell_words(cell: int) -> str:
    """ "x<column> y<row>" of a floor cell (1-based)."""
    return f"x{cell % GRID + 1} y{cell // GRID + 1}"


def scene_key(state: State) -> Key:
    """A CLEVRER state without its object ids: the sorted (look, cell) pairs."""
    return tuple(sorted((look, cell) for _, look, cell in state))


def clevrer_text(state: State) -> str:
    """The sentence of a CLEVRER state (see the module docstring)."""
    clauses = sorted(f"{APPEARANCES[look]} at {cell_words(cell)}" for _, look, cell in state)
    return f" {SEPARATOR} ".join(clauses)


def parse_text(text: str) -> Key:
    """The id-free scene of a sentence of `clevrer_text`; ValueError names a bad clause."""
    pairs = []
    for clause in text.split(SEPARATOR):
        words = clause.split()
        if len(words) != 6 or words[3] != "at":
            raise ValueError(f"clause {clause!r}: expected '<colour> <material> <shape> at xN yN'")
        look, where = " ".join(words[:3]), words[4:]
        cells = [cell_words(c).split() for c in range(GRID * GRID)]
        if look not in APPEARANCES or where not in cells:
            raise ValueError(f"clause {clause!r}: unknown look or floor cell")
        pairs.append((APPEARANCES.index(look), cells.index(where)))
    return tuple(sorted(pairs))


def _paint(image: np.ndarray, look: int, cx: float, cy: float, radius: float) -> None:
    """One object seen from above (see the module docstring)."""
    colour, material, shape = APPEARANCES[look].split()
    ys, xs = np.mgrid[: image.shape[0], : image.shape[1]] + 0.5
    if shape == "cube":
        body = (np.abs(xs - cx) <= radius * 0.9) & (np.abs(ys - cy) <= radius * 0.9)
    else:
        body = (xs - cx) ** 2 + (ys - cy) ** 2 <= radius**2
    image[body] = COLOUR_RGB[colour]
    if shape == "cylinder":
        inner = (xs - cx) ** 2 + (ys - cy) ** 2 <= (0.7 * radius) ** 2
        image[body & ~inner] = np.asarray(COLOUR_RGB[colour]) * 0.45
    if material == "metal":
        image[(xs - cx) ** 2 + (ys - cy) ** 2 <= (0.3 * radius) ** 2] = 255


def floor_map(
    state: State, seed: int, size: int, jitter: float = 0.0, scale_jitter: float = 0.0
) -> np.ndarray:
    """A CLEVRER state drawn from above, uint8 [size, size, 3]; `jitter` in px of a 32 px
    frame, scaled to `size`. Zero jitters draw the canonical map."""
    rng = np.random.default_rng(seed)
    image = np.full((size, size, 3), FLOOR_GREY, dtype=np.float64)
    step = size / GRID
    for k in range(1, GRID):
        line = int(round(k * step))
        image[max(0, line - 1) : line + 1, :] = LINE_GREY
        image[:, max(0, line - 1) : line + 1] = LINE_GREY
    scene = scene_key(state)
    radius = step * 0.22
    for k, (look, cell) in enumerate(scene):
        mates = [j for j, (_, other) in enumerate(scene) if other == cell]
        cx, cy = (cell % GRID + 0.5) * step, (cell // GRID + 0.5) * step
        if len(mates) > 1:  # objects sharing a cell sit apart around its centre
            angle = 2 * np.pi * mates.index(k) / len(mates) + np.pi / 4
            cx, cy = cx + step * 0.25 * np.cos(angle), cy + step * 0.25 * np.sin(angle)
        dx, dy = rng.uniform(-jitter, jitter, size=2) * size / BASE_SIZE
        scale = 1 + rng.uniform(-scale_jitter, scale_jitter)
        _paint(image, look, cx + dx, cy + dy, radius * (0.7 if len(mates) > 1 else 1.0) * scale)
    return np.round(image).astype(np.uint8)


@dataclass(frozen=True)
class RealView:
    """How the items of one real dataset are shown: `dataset` (clevrer or ssv2), the SSv2
    templates by class index, the floor map size."""

    dataset: str
    templates: Mapping[int, str] | None = None
    image_size: int = 0

    @property
    def modes(self) -> tuple[str, ...]:
        """The option modes the dataset can show."""
        return ("text", "visual") if self.dataset == "clevrer" else ("text",)

    def key(self, state: State) -> Key:
        """What a view of `state` shows, comparable across options."""
        if self.dataset == "clevrer":
            return scene_key(state)
        return ((state[0][1],),)

    def text(self, state: State) -> str:
        """The option sentence of `state`."""
        if self.dataset == "clevrer":
            return clevrer_text(state)
        assert self.templates is not None
        return self.templates[state[0][1]]

    def parse(self, text: str) -> Key:
        """The shown scene of a sentence (the oracle's reading)."""
        if self.dataset == "clevrer":
            return parse_text(text)
        assert self.templates is not None
        index = {template: k for k, template in self.templates.items()}
        if text not in index:
            raise ValueError(f"{text!r} is not an SSv2 template")
        return ((index[text],),)

    def option_texts(self, item: Item) -> list[str]:
        """The options as sentences."""
        return [self.text(state) for state in item.options]

    def option_images(self, item: Item, seed: int, render: Mapping[str, Any]) -> np.ndarray:
        """The options as floor maps, uint8 [4, S, S, 3] (CLEVRER only)."""
        if self.dataset != "clevrer":
            raise ValueError(f"{self.dataset} options have no image view (text only)")
        return np.stack(
            [
                floor_map(
                    state,
                    derive_seed(seed, "option", item.id, slot),
                    self.image_size,
                    float(render["jitter"]),
                    float(render["scale_jitter"]),
                )
                for slot, state in enumerate(item.options)
            ]
        )
