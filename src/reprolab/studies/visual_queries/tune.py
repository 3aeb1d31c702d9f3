"""Tuning of the visual_queries study inside the workflow: the validation items, a method's
tuning record (the grids are checked by `workflow_io.check_grids`, which the rule file calls).

* `validation_split`: a tuning seed's training videos (its own `dataset.split`; its test videos
  are never read) less `tune.validation_videos` validation videos. These are drawn only among
  the videos that no evaluation seed tests: the videos are one pool shared by every seed, so a
  validation video drawn anywhere else would be some evaluation seed's test video.
* `tune_method` (one `visual_queries_tune_method` job per record): trains the method at every
  grid point on every tuning seed with the table's budget (steps, batch size), on the items of
  the fit videos, and scores it on the items of the validation videos (built apart, as the
  test items are: their distractor layouts come from validation videos only); `core.tuning.tune`
  selects the best mean. The score is the accuracy (%) averaged over the three families and
  over the modes the trained model answers: both modes for caption-then-reason and TinyVLM (one
  model answers both, so neither mode is favoured), the visual mode for `blind` (only its
  option-image CNN learns; its text half has no learning rate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.tuning import tune
from reprolab.studies.visual_queries.dataset import Corpus, build_items, split
from reprolab.studies.visual_queries.items import FAMILIES, MODES, Item
from reprolab.studies.visual_queries.jobs import STUDY, accuracy, fit_and_answer, with_values
from reprolab.studies.visual_queries.views import Renders
from reprolab.studies.visual_queries.workflow_io import LEARNS

SCORED_MODES: dict[str, tuple[str, ...]] = {"blind": ("visual",)}
"""The modes a record's score averages over where not both: `blind` learns in visual mode only."""


def validation_split(
    names: Sequence[str],
    seed: int,
    n_test: int,
    eval_seeds: Sequence[int],
    n_validation: int,
) -> dict[str, list[str]]:
    """The tuning seed's training videos as {"fit": ..., "validation": ...}.

    The tuning seed splits the videos as an evaluation seed does (`dataset.split`); its test
    videos are dropped unread. `n_validation` of its training videos, drawn from
    derive_seed(seed, STUDY, "validation") among those that no seed of `eval_seeds` tests,
    are the validation videos; the rest are fit on. A video brings its item of every family,
    so the draw is stratified by family (equal counts up to skipped items)."""
    names = tuple(names)
    train = split(names, seed, n_test)["train"]
    tested = {v for s in eval_seeds for v in split(names, int(s), n_test)["test"]}
    eligible = [v for v in train if v not in tested]
    if not 0 < n_validation < len(train) or n_validation > len(eligible):
        raise ValueError(
            f"visual_queries.tune.validation_videos: {n_validation} validation videos, but "
            f"tuning seed {seed} has {len(train)} training videos of which {len(eligible)} are "
            f"in no evaluation seed's test split"
        )
    rng = np.random.default_rng(derive_seed(seed, STUDY, "validation"))
    held = {eligible[k] for k in rng.choice(len(eligible), size=n_validation, replace=False)}
    return {
        "fit": [v for v in train if v not in held],
        "validation": [v for v in train if v in held],
    }


def tuning_items(
    corpus: Corpus, seed: int, params: Mapping[str, Any], eval_seeds: Sequence[int]
) -> dict[str, list[Item]]:
    """The fit and validation items of a tuning seed: `validation_split`'s two parts, each
    built apart (`dataset.build_items`) so that a validation item's distractor layouts come
    from validation videos, as a test item's come from test videos."""
    videos = validation_split(
        corpus.names, seed, int(params["n_test"]), eval_seeds, params["tune"]["validation_videos"]
    )
    return {
        part: build_items(corpus, names, seed, params["items"])[0] for part, names in videos.items()
    }


def scored_modes(method: str) -> tuple[str, ...]:
    """The option modes whose validation accuracy `method`'s tuning score averages."""
    return SCORED_MODES.get(method, MODES)


def metric(method: str) -> str:
    """The name of `method`'s tuning score, as its record states it."""
    modes = scored_modes(method)
    shown = " and ".join(modes) + (" modes" if len(modes) > 1 else " mode")
    return f"validation accuracy (%), mean over the families and the {shown}"


def score(items: Sequence[Item], answers: Mapping[str, np.ndarray], modes: Sequence[str]) -> float:
    """Accuracy (%) averaged over the families and `modes` (each family and mode weighs the
    same, whatever its item count); NaN when a family has no item."""
    return float(np.mean([accuracy(items, answers[mode])[f] for mode in modes for f in FAMILIES]))


def tune_method(
    method: str,
    corpus: Corpus,
    params: Mapping[str, Any],
    seeds: Sequence[int],
    eval_seeds: Sequence[int],
    threads: int,
) -> dict[str, Any]:
    """The tuning record of `method` (a record name, `workflow_io.tuning_records`): every point of
    `tune.grid.<method>` trained on each tuning seed's fit items with the table's budget,
    seeded as a table run of that seed is, and scored on its validation items (`score`). The
    draws that no tuned value changes (option images, TinyVLM's alignment batches) are made
    once per tuning seed (`views.Renders`)."""
    grid = params["tune"]["grid"][method]
    data = {int(seed): tuning_items(corpus, int(seed), params, eval_seeds) for seed in seeds}
    renders = {seed: Renders() for seed in data}
    modes = scored_modes(method)

    def evaluate(values: dict[str, Any], seed: int) -> float:
        seed_everything(derive_seed(seed, STUDY, method), threads)
        trial = with_values(params, method, values)
        fit, validation = data[seed]["fit"], data[seed]["validation"]
        answers, _ = fit_and_answer(
            method, corpus, fit, validation, seed, trial, False, renders[seed]
        )
        value = score(validation, answers, modes)
        print(f"visual_queries tune {method} {values} seed{seed}: {value:.2f}", flush=True)
        return value

    record = tune(method, grid, evaluate, list(data), metric(method), "max")
    record["settings"] = {k: v for k, v in params[LEARNS[method]].items() if k not in grid}
    record["validation"] = {
        "videos": params["tune"]["validation_videos"],
        "drawn_among": "the tuning seed's training videos that no evaluation seed tests",
        "evaluation_seeds": [int(s) for s in eval_seeds],
    }
    record["items"] = {
        f"seed{seed}": {part: len(items) for part, items in parts.items()}
        for seed, parts in data.items()
    }
    return record
