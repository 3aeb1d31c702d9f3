"""The `nas_tune` job: choose the covariance weight λ and the covariance ridge every editor
shares, for the baseline.

The prototype's rule, not the card's: the card calibrated λ so that plain MEMIT collapses
within the stream, which builds the result in. Here each grid point is scored by plain MEMIT's
mean composite (the harmonic mean of efficacy, generalisation and specificity, growth.py) over
the checkpoints of a `tune.edits`-edit stream of each tuning seed (the first checkpoint is the
first batch, so a point whose single edits fail scores low): the strongest plain editor on the
tuning seeds.
`core.tuning.tune` selects the best mean over the seeds; NAS and every other method then use
that point untuned, and no evaluation seed's stream enters (a dataset file's tuning streams are
drawn from its tuning part, jobs.file_source).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from transformers import AutoTokenizer

from reprolab.core.determinism import seed_everything
from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.nas.growth import composite
from reprolab.studies.nas.jobs import TUNED, covariances, editing_of, load_model, stream_source
from reprolab.studies.nas.sequential import Method, SequentialRun

METRIC = "plain MEMIT's mean composite over the checkpoints of a short stream"


def tune_editing(
    params: Mapping[str, Any],
    model_dir: str | Path,
    world_path: str | Path | None,
    seeds: Sequence[int],
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Tune λ and the ridge over `tune.grid` on the tuning `seeds`; write the record."""
    seed_everything(0, threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    unedited = load_model(model_dir, params["device"])
    edits = int(params["tune"]["edits"])
    sources = {seed: stream_source(params, world_path, seed, edits, tuning=True) for seed in seeds}
    moments: dict[float, dict] = {}

    def evaluate(values: dict[str, Any], seed: int) -> float:
        requests, openings, texts, generic = sources[seed]
        ridge = float(values["ridge"])
        editing = editing_of(params, values)
        if ridge not in moments:
            moments[ridge] = covariances(unedited, tokenizer, editing.layers, texts, ridge)
        run = SequentialRun(
            load_model(model_dir, params["device"]),
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
