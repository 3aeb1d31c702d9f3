"""The bidrive table, claim checks, study metrics and curves, from the per-seed job files.

Table: rows = ConstVel, MLP-L2, FM-<steps>+heuristic, AR-teacher+ML, Student-MLE+ML,
BiDrive-distill+heuristic, BiDrive-distill+ML, BiDrive+LO (workflow_io.ROWS); columns: the
synthetic PDMS sub-scores NC, DAC, TTC, EP, C and PDMS (means over the test scenes), the share
of scenes with a collision, minADE over the row's samples and ADE of its selected plan to the
expert (m), the NLL of the expert plans (nats per plan; the flows only) and the sequential
network passes per plan (a deterministic speed measure; wall-clock ratios are in
benchmarks/bidrive_latency.py).

Claims (paired checks are one-sided paired t-tests over the seeds, Holm-corrected within the
study; every row of a seed plans the same test scenes):
1. `paired`, non-inferiority: the distilled student keeps the teacher's quality: its PDMS
   (ML selection) above the teacher's minus `claims.pdms_margin`;
2. `sanity`: at a fraction of the teacher's sequential passes (≥ `claims.min_speedup` times
   fewer, by construction of the architectures);
3. `paired`: selection by exact likelihood beats the heuristic on the same samples:
   BiDrive-distill+ML's PDMS above BiDrive-distill+heuristic's;
4. `paired`: latent optimisation raises PDMS above flow matching with heuristic selection;
5. `paired`: collisions fall with latent optimisation: BiDrive+LO's collision rate below
   BiDrive-distill+ML's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import paired_check, sanity_check
from reprolab.core.io import read_h5, read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats
from reprolab.studies.bidrive.workflow_io import TRAINED, row_names

COLUMNS = {
    "NC": "NC",
    "DAC": "DAC",
    "TTC": "TTC",
    "EP": "EP",
    "C": "C",
    "PDMS": "PDMS",
    "collision_rate": "collisions",
    "min_ade": "minADE (m)",
    "ade": "ADE (m)",
    "expert_nll": "expert NLL",
    "passes": "passes/plan",
}
"""metrics.json key of a row → table column."""
NOTES = (
    "Every trained planner ran at the learning rate its tuning job selected on the tuning "
    "seeds (disjoint from the evaluation seeds; metrics.json `tuning`), and the distillation at "
    "the rate its own tuning job selected (distilling the tuned teacher into the tuned student). "
    "Every row of a seed plans the same test scenes, so rows pair by seed. "
    "Paired checks are one-sided paired t-tests over the seeds listed, Holm-corrected within "
    "the study; they hold when the mean difference points the claimed way by more than "
    "min_effect (beyond the margin for the non-inferiority check) and the adjusted p < alpha. "
    "The speed check counts sequential network passes per plan from the architectures: it "
    "holds by construction and is shown, not counted."
)


def run_path(runs_dir: str | Path, seed: int) -> Path:
    """Where the job of `seed` writes its metrics.json."""
    return Path(runs_dir) / f"seed{seed}" / "metrics.json"


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: str | Path) -> dict:
    """{"jobs": [metrics.json per seed], "curves": [curves.h5 per seed]}."""
    paths = [run_path(runs_dir, s) for s in seeds]
    return {
        "jobs": [read_json(p) for p in paths],
        "curves": [read_h5(p.with_name("curves.h5")) for p in paths],
    }


def values(runs: dict, name: str, key: str) -> np.ndarray:
    """One value per seed of row `name`'s `key` (NaN where it does not apply)."""
    out = [job["rows"][name].get(key) for job in runs["jobs"]]
    return np.asarray([np.nan if v is None else v for v in out], dtype=float)


def table(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> Table:
    """Rows = the planners; the columns of the module docstring."""
    names = list(row_names(params).values())
    out, absent = [], set()
    for name in names:
        for key, column in COLUMNS.items():
            per_seed = values(runs, name, key)
            if np.all(np.isnan(per_seed)):
                absent.add((name, column))
                continue
            out += [
                Record(name, column, seed, float(v))
                for seed, v in zip(seeds, per_seed, strict=True)
            ]
    return Table(
        out,
        names,
        list(COLUMNS.values()),
        "Planners on synthetic driving scenes: synthetic PDMS and its sub-scores, collision "
        "rate, minADE over samples and ADE of the selected plan, NLL of the expert plans "
        "(flows) and sequential network passes per plan; mean ± std over seeds.",
        frozenset(absent),
    )


def claim_checks(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict]:
    """The checks of the module docstring."""
    spec, names = params["claims"], row_names(params)
    test = {"alpha": spec["alpha"], "min_effect": spec["min_effect"]}

    def compare(statement, metric, key, row, baseline, direction, margin=0.0):
        return paired_check(
            statement,
            metric,
            names[row],
            names[baseline],
            values(runs, names[row], key),
            values(runs, names[baseline], key),
            seeds,
            direction=direction,
            margin=float(margin),
            **test,
        )

    teacher_passes = float(values(runs, names["teacher"], "passes")[0])
    student_passes = float(values(runs, names["distilled"], "passes")[0])
    speedup = teacher_passes / student_passes
    return [
        compare(
            f"The distilled one-pass student keeps the teacher's quality: PDMS above the "
            f"teacher's minus {spec['pdms_margin']:g}",
            "PDMS",
            "PDMS",
            "distilled",
            "teacher",
            "greater",
            spec["pdms_margin"],
        ),
        sanity_check(
            "The distilled student plans in a fraction of the teacher's sequential passes",
            "sequential network passes per plan",
            f"teacher passes / student passes ≥ {spec['min_speedup']:g} (from the architectures)",
            speedup >= float(spec["min_speedup"]),
            {"teacher": teacher_passes, "student": student_passes, "ratio": speedup},
        ),
        compare(
            "Selection by exact likelihood beats the mean heuristic on the same samples: "
            "higher PDMS",
            "PDMS",
            "PDMS",
            "distilled",
            "distilled_heuristic",
            "greater",
        ),
        compare(
            "Latent optimisation under safety and dynamics costs raises PDMS above flow "
            "matching with heuristic selection",
            "PDMS",
            "PDMS",
            "lo",
            "fm",
            "greater",
        ),
        compare(
            "Collisions fall with latent optimisation",
            "share of scenes with a collision",
            "collision_rate",
            "lo",
            "distilled",
            "less",
        ),
    ]


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: per row the seed statistics of every measure and of PDMS per scene kind,
    and the learning rates the jobs ran with."""
    out: dict[str, Any] = {
        "seeds": list(seeds),
        "hyperparameters": runs["jobs"][0]["hyperparameters"],
        "scene_kinds": runs["jobs"][0]["scene_kinds"],
        "rows": {},
    }
    for name in row_names(params).values():
        entry = {
            key: seed_stats(values(runs, name, key))
            for key in COLUMNS
            if not np.all(np.isnan(values(runs, name, key)))
        }
        kinds = runs["jobs"][0]["rows"][name]["pdms_by_kind"]
        entry["pdms_by_kind"] = {
            kind: seed_stats(
                [
                    np.nan
                    if job["rows"][name]["pdms_by_kind"][kind] is None
                    else job["rows"][name]["pdms_by_kind"][kind]
                    for job in runs["jobs"]
                ]
            )
            for kind in kinds
        }
        out["rows"][name] = entry
    return out


def curve_rows(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: each trained model's loss per logged window (x = step at the window's end),
    mean over seeds, series = the model (teacher, student: NLL per plan; fm, mlp: their
    losses; distilled: the distillation loss)."""
    every = int(params["train"]["log_every"])
    points = []
    for model in [*TRAINED, "distilled"]:
        steps = int(
            params["distillation"]["steps"] if model == "distilled" else params["train"]["steps"]
        )
        mean = np.mean([job[model] for job in runs["curves"]], axis=0)
        points += [
            (model, float(min((k + 1) * every, steps)), float(v)) for k, v in enumerate(mean)
        ]
    return curve_frame(points)
