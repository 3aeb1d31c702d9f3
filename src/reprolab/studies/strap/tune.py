"""The `strap_tune` job: choose one row's peak learning rate on the tuning seeds.

One job per tuned row (workflow_io.TUNED). Each point of `tune.grid.<row>` trains the row's
placement on the fine task's training clips less a held-out `tune.validation_fraction` (drawn
from the tuning seed) with the table's epochs and batch size, and scores top-1 on the held-out
clips: never on the test split. STRAP's placement uses the boundary measured on the tuning
seed's own sensitivity sample, as a table run does. `core.tuning.tune` selects the best mean
over the tuning seeds and writes the record the run jobs read. The coarse task reuses the fine
task's rates (tuning it too would double the budget; the study page says so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.strap.adapters import placement
from reprolab.studies.strap.backbone import blocks, load_backbone
from reprolab.studies.strap.data import load_task, validation_split
from reprolab.studies.strap.jobs import measure_sensitivity, run_placement

METRIC = "top-1 (%) on held-out training clips of the fine task"


def tune_row(
    params: Mapping[str, Any],
    row: str,
    seeds: Sequence[int],
    backbone_dir: str | Path,
    task_files: tuple[str | Path, str | Path],
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Tune `row`'s learning rate over `tune.grid.<row>` on `seeds`; write its record."""
    backbone = load_backbone(backbone_dir).to(resolve_device(params["train"]["device"]))
    layers = len(blocks(backbone))
    clips = load_task(*task_files)
    fraction = float(params["tune"]["validation_fraction"])

    def evaluate(values: dict[str, Any], seed: int) -> float:
        seed_everything(derive_seed(seed, "strap"), threads)
        task_seed = derive_seed(seed, "strap", "fine")
        train, held = validation_split(clips["train"], fraction, task_seed)
        boundary = None
        if row == "strap":
            measured = measure_sensitivity(backbone, train, params, task_seed)
            boundary = measured["boundary"]["segment"]
        result = run_placement(
            backbone,
            {"train": train, "test": held},
            placement(row, layers, boundary),
            float(values["lr"]),
            params,
            task_seed,
            f"tune {row} lr={values['lr']} seed {seed}",
        )
        return float(result["accuracy"])

    record = tune(row, params["tune"]["grid"][row], evaluate, seeds, METRIC, "max")
    write_tuning(out_path, record)
    return record
