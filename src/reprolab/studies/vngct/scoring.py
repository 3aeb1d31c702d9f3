"""Which metric scores each task's generated answers, and the scoring itself (no torch).

At paper scale params declare, per task of the stream, the metric CoIN reports for it
(`vngct.scoring.metrics`, with `vngct.scoring.max_new_tokens` for the generation); the run
generates every test answer greedily (`generation`) and scores it here. Without `scoring`
(smoke and ci) no answer is generated: each task is scored by ranking its single-word answers
(`continual.evaluate`).

Metrics (`METRICS`), each a score per item whose mean is the task's score:

* ``vqa_accuracy``: `vqa.vqa_accuracy` against the item's reference answers (the human
  answers where the record carries them, else its one ground-truth answer);
* ``cider``: `cider.cider_d` against the item's reference captions, document frequencies from
  the references of the items evaluated together;
* ``iou``: `grounding.grounding_hits`, 1 when the generated box has IoU ≥ 0.5 with the item's
  one reference box.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from reprolab.studies.vngct.cider import cider_d
from reprolab.studies.vngct.grounding import grounding_hits
from reprolab.studies.vngct.vqa import vqa_accuracy

METRIC_LABELS = {"vqa_accuracy": "VQA acc", "cider": "CIDEr", "iou": "IoU≥0.5 acc"}
"""How a table names each metric (the schema's enum lists the same keys)."""


def _vqa(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    return np.asarray(
        [vqa_accuracy(p, refs) for p, refs in zip(predictions, references, strict=True)],
        dtype=float,
    )


def _iou(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    boxes = []
    for number, refs in enumerate(references):
        if len(refs) != 1:
            raise ValueError(f"item {number}: {len(refs)} reference boxes, expected exactly one")
        boxes.append(refs[0])
    return grounding_hits(predictions, boxes)


METRICS: dict[str, Callable[[Sequence[str], Sequence[Sequence[str]]], np.ndarray]] = {
    "vqa_accuracy": _vqa,
    "cider": cider_d,
    "iou": _iou,
}


def score_answers(
    metric: str, predictions: Sequence[str], references: Sequence[Sequence[str]]
) -> np.ndarray:
    """Per item, the score of `metric` of each prediction against its references."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
    return METRICS[metric](predictions, references)


def task_metrics(scoring: Mapping[str, Any], tasks: Sequence[str]) -> dict[str, str]:
    """{task: metric} for the stream's `tasks`, in stream order, from params `scoring`.
    ValueError naming `vngct.scoring.metrics` when a task has no metric or an entry names no
    task of the stream (a typo would otherwise leave a task unscored)."""
    declared = scoring["metrics"]
    missing = [task for task in tasks if task not in declared]
    unknown = sorted(set(declared) - set(tasks))
    if missing or unknown:
        problems = [f"no metric for task(s) {', '.join(missing)}"] if missing else []
        problems += [f"{', '.join(unknown)} name no task of the stream"] if unknown else []
        raise ValueError(
            f"vngct.scoring.metrics: {'; '.join(problems)} (stream tasks: {', '.join(tasks)})"
        )
    return {task: declared[task] for task in tasks}
