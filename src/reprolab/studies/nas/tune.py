"""The `nas_tune` job: choose the covariance weight λ and the covariance ridge every editor
shares, for the baseline.

The prototype's rule, not the card's: the card calibrated λ so that plain MEMIT collapses
within the stream, which builds the result in. Here each grid point is scored by plain MEMIT's
mean composite (efficacy + generalisation + specificity) / 3 over the checkpoints of a
`tune.edits`-edit stream of each tuning seed (the first checkpoint is the first batch, so a
point whose single edits fail scores low): the strongest plain editor on the tuning seeds.
`core.tuning.tune` selects the best mean over the seeds; NAS and every other method then use
that point untuned, and no evaluation seed's stream enters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from transformers import AutoTokenizer

from reprolab.core.tuning import tune, write_tuning
from reprolab.models.facts import read_world
from reprolab.studies.nas.growth import composite
from reprolab.studies.nas.jobs import TUNED, covariances, editing_of, load_model, world_source
from reprolab.studies.nas.sequential import Method, SequentialRun

METRIC = "plain MEMIT's mean composite over the checkpoints of a short stream"


def tune_editing(
    params: Mapping[str, Any],
    model_dir: str | Path,
    world_path: str | Path,
    seeds: Sequence[int],
    out_path: str | Path,
) -> dict[str, Any]:
    """Tune λ and the ridge over `tune.grid` on the tuning `seeds`; write the record."""
    world = read_world(world_path)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    unedited = load_model(model_dir)
    edits = int(params["tune"]["edits"])
    sources = {seed: world_source(params, world, seed, edits) for seed in seeds}
    moments: dict[float, dict] = {}

    def evaluate(values: dict[str, Any], seed: int) -> float:
        requests, openings, texts, generic = sources[seed]
        ridge = float(values["ridge"])
        editing = editing_of(params, values)
        if ridge not in moments:
            moments[ridge] = covariances(unedited, tokenizer, editing.layers, texts, ridge)
        run = SequentialRun(
            load_model(model_dir),
            tokenizer,
            moments[ridge],
            openings,
            editing,
            Method("memit"),
            {},
            seed,
        )
        trace = run.run(requests, generic, f"nas tune {values} seed {seed}", False)
        return float(np.mean([composite(c) for c in trace["checkpoints"]]))

    record = tune(TUNED, params["tune"]["grid"], evaluate, seeds, METRIC, "max")
    write_tuning(out_path, record)
    return record
