"""Grounding accuracy: boxes read from text answers, scored by intersection over union.

CoIN's Grounding task (RefCOCO, RefCOCO+, RefCOCOg) answers with a box in normalised
coordinates written as text, ``[x1, y1, x2, y2]`` (top-left and bottom-right corners, e.g.
``[0.12, 0.30, 0.55, 0.80]``). `parse_box` reads the first such bracketed list of four numbers
from a text; `grounding_hits` scores each generated answer 1 when its box overlaps the
reference box with IoU ≥ 0.5, the RefCOCO criterion, else 0. A generated answer without a
readable box, or with a box of no area, is a miss, never an error: what the model writes is
what is scored. A reference answer without one is bad data and is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

IOU_THRESHOLD = 0.5
_NUMBER = r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*"
_BOX = re.compile(r"\[" + ",".join([_NUMBER] * 4) + r"\]")

Box = tuple[float, float, float, float]


def parse_box(text: str) -> Box | None:
    """The first ``[x1, y1, x2, y2]`` of `text` as floats, or None when there is none."""
    match = _BOX.search(text)
    if match is None:
        return None
    x1, y1, x2, y2 = (float(value) for value in match.groups())
    return x1, y1, x2, y2


def area(box: Box) -> float:
    """Area of `box`; 0 when its corners are not top-left then bottom-right."""
    x1, y1, x2, y2 = box
    return max(0.0, x2 - x1) * max(0.0, y2 - y1)


def iou(first: Box, second: Box) -> float:
    """Intersection over union of two boxes; 0 when either has no area."""
    if area(first) == 0 or area(second) == 0:
        return 0.0
    overlap = (
        max(first[0], second[0]),
        max(first[1], second[1]),
        min(first[2], second[2]),
        min(first[3], second[3]),
    )
    intersection = area(overlap)
    return intersection / (area(first) + area(second) - intersection)


def grounding_hits(predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """Per item, 1.0 when the box of the prediction has IoU ≥ 0.5 with the reference's box, else
    0.0 (an unreadable prediction included). ValueError naming the item when a reference holds
    no box or the counts differ."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    hits = []
    for number, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        truth = parse_box(reference)
        if truth is None:
            raise ValueError(
                f"item {number}: reference answer {reference!r} holds no box; expected "
                "'[x1, y1, x2, y2]' in normalised coordinates"
            )
        box = parse_box(prediction)
        hits.append(float(box is not None and iou(box, truth) >= IOU_THRESHOLD))
    return np.asarray(hits, dtype=float)
