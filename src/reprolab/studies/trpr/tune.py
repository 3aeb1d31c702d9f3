"""The `trpr_tune` job: choose one row's values on one benchmark on the tuning seeds.

One job per tuned row and benchmark (workflow_io.tuned_rows). Each point of `tune.grid.<row>`
(the row's one knob, Method.knob: the learning rate, TRPR's trust-region radius δ or a penalty's
weight; a row whose knob is not the rate trains at the rate plain MoE's record chose, which its
job reads) trains the row through the stream of each tuning seed (the seed's class order) on the
benchmark's training images less a held-out `tune.validation_fraction` per class, and scores the
final accuracy on the held-out images: never on the test split. `core.tuning.tune` selects the
best mean over the tuning seeds and writes the record the run jobs read, as method
`<benchmark>/<row>` (jobs.tuned_on).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.trpr.data import Stream, validation_stream
from reprolab.studies.trpr.jobs import load_stream, run_row, tuned_on
from reprolab.studies.trpr.workflow_io import rate_source

METRIC = "final accuracy on held-out training images, after the last task"


def tune_row(
    params: Mapping[str, Any],
    benchmark: str,
    row: str,
    seeds: Sequence[int],
    backbone_dir: str | Path,
    stream_path: str | Path,
    rate_files: Sequence[str | Path],
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Tune `row` over `tune.grid.<row>` on `benchmark` and `seeds`; write its record.
    `rate_files` holds the record of the row whose learning rate `row` trains at (empty when
    `row` tunes its own)."""
    from reprolab.studies.trpr.backbone import load_backbone
    from reprolab.studies.trpr.learner import FrozenInputs

    backbone = load_backbone(str(backbone_dir))
    tasks = int(params["benchmarks"][benchmark]["tasks"])
    fraction = float(params["tune"]["validation_fraction"])
    source = rate_source(row)
    base = {"lr": tuned_on(benchmark, rate_files)[source]["lr"]} if source else {}

    streams: dict[int, tuple[Stream, FrozenInputs]] = {}

    def held_out(seed: int) -> tuple[Stream, FrozenInputs]:
        """The tuning seed's validation stream and its frozen inputs, made once per seed."""
        if seed not in streams:
            stream = load_stream(stream_path, tasks, seed)
            held = validation_stream(stream, fraction, derive_seed(seed, "trpr", "validation"))
            first = int(params["model"]["first_adapted"])
            streams[seed] = held, FrozenInputs.of(backbone, held, first)
        return streams[seed]

    def evaluate(values: dict[str, Any], seed: int) -> float:
        seed_everything(derive_seed(seed, "trpr"), threads)
        stream, frozen = held_out(seed)
        settings = {**base, **values}
        result = run_row(row, backbone, stream, params, settings, derive_seed(seed, "trpr"), frozen)
        return float(result["final"])

    grid = params["tune"]["grid"][row]
    record = tune(f"{benchmark}/{row}", grid, evaluate, seeds, METRIC, "max")
    write_tuning(out_path, record)
    return record
