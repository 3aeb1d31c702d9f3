"""The strap table, claim checks and study metrics, from the per-seed metrics files.

Table: rows = the placements (linear probe, spatial-all, temporal-all, ST-Adapter, AIM, STRAP,
STRAP-reversed) and the oracle b (the b-sweep's best point per seed); columns = top-1 (%) on
the fine (motion) and coarse (appearance) task, trainable parameters (K), inference MFLOP per
clip and its percentage of ST-Adapter's, and b. A column that does not apply to a row is "—".

"Uniform placement" is the strongest of `claims.uniform` (temporal-all, ST-Adapter, AIM) by
mean top-1 over the table's seeds on the task at hand, so every comparison is with the
hardest all-layer rival. Every rule and threshold is in `strap.claims`, fixed before the
evaluation seeds were run:
1. Temporal sensitivity grows with depth (`bound`): on every seed, Spearman's ρ of TS against
   block depth (fine task) is at least `claims.min_trend`.
2. STRAP beats uniform placement on the fine task (`paired`, one-sided paired t-test, Holm):
   STRAP − strongest uniform > `claims.min_effect` points.
3. STRAP has fewer trainable parameters (`bound`, computed exactly from the models): its
   reduction against each uniform spatio-temporal placement (`claims.parameter_baselines`:
   ST-Adapter, AIM) is at least `claims.min_parameter_reduction` % (the abstract: 29-48 %).
4. STRAP's inference is cheaper (`bound`): its FLOPs per clip over each of
   `claims.parameter_baselines`' are at most `claims.max_cost_ratio`.
5. On the coarse task STRAP matches uniform placement (`paired` with a margin): STRAP > the
   strongest uniform − `claims.coarse_margin` points.
6. b* is close to the oracle b (`tolerance`): on every seed |b* − b_oracle| ≤
   `claims.oracle_tolerance` blocks.
7. Sanity (never counted): every model's counted trainable adapter parameters equal the
   closed form of adapters.placement_parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import bound_check, paired_check, sanity_check, tolerance_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats

NAMES = {
    "probe": "linear probe",
    "spatial_all": "spatial-all",
    "temporal_all": "temporal-all",
    "st_adapter": "ST-Adapter",
    "aim": "AIM",
    "strap": "STRAP (b*)",
    "strap_reversed": "STRAP-reversed",
    "oracle_b": "oracle b",
}
COST_REFERENCE = "st_adapter"
COLUMNS = {
    "fine": "fine (motion) top-1 (%)",
    "coarse": "coarse (appearance) top-1 (%)",
    "parameters": "trainable params (K)",
    "flops": "inference MFLOP / clip",
    "cost_ratio": "FLOPs vs ST-Adapter (%)",
    "b": "b",
}
NOTES = __doc__.split("\n\n", 2)[2]


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> list[dict]:
    """The metrics.json of every seed, in seed order."""
    return [read_json(Path(runs_dir) / f"seed{s}" / "metrics.json") for s in seeds]


def oracle(run: dict) -> tuple[int, dict]:
    """The b-sweep's best point of one seed (the shallower b of equals) and its result."""
    sweep = run["tasks"]["fine"]["sweep"]
    best = max(sorted(sweep, key=int), key=lambda b: sweep[b]["accuracy"])
    return int(best), sweep[best]


def entry(run: dict, task: str, row: str) -> dict | None:
    """One row's result on one task of a seed's run (None when the row did not run there)."""
    if row == "oracle_b":
        return oracle(run)[1] if task == "fine" else None
    return run["tasks"][task]["rows"].get(row)


def values(runs: list[dict], task: str, row: str, key: str = "accuracy") -> np.ndarray:
    """One value per seed of `key` for `row` on `task` (NaN where the row did not run)."""
    found = [entry(run, task, row) for run in runs]
    return np.array([np.nan if e is None else float(e[key]) for e in found])


def rows_of(params: dict[str, Any]) -> list[str]:
    """The table's rows: the fine task's rows, then the oracle b."""
    return [*params["rows"], "oracle_b"]


def boundary_values(runs: list[dict], row: str) -> np.ndarray:
    """Per seed the b of a row: b* for the STRAP rows, the oracle's b, NaN otherwise."""
    if row in ("strap", "strap_reversed"):
        return np.array(
            [run["tasks"]["fine"]["sensitivity"]["boundary"]["segment"] for run in runs], float
        )
    if row == "oracle_b":
        return np.array([oracle(run)[0] for run in runs], float)
    return np.full(len(runs), np.nan)


def table(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> Table:
    """Rows = placements and the oracle b; columns = COLUMNS."""
    out, absent = [], set()
    for row in rows_of(params):
        reference = values(runs, "fine", COST_REFERENCE, "flops")
        flops = values(runs, "fine", row, "flops")
        cells = {
            "fine": values(runs, "fine", row),
            "coarse": values(runs, "coarse", row),
            "parameters": values(runs, "fine", row, "parameters") / 1e3,
            "flops": flops / 1e6,
            "cost_ratio": 100.0 * flops / reference,
            "b": boundary_values(runs, row),
        }
        for key, per_seed in cells.items():
            if np.isnan(per_seed).all():  # the row did not run on that task, or has no b
                absent.add((NAMES[row], COLUMNS[key]))
                continue
            out += [
                Record(NAMES[row], COLUMNS[key], s, float(v))
                for s, v in zip(seeds, per_seed, strict=True)
            ]
    return Table(
        out,
        [NAMES[r] for r in rows_of(params)],
        list(COLUMNS.values()),
        "STRAP against uniform adapter placements in a frozen tiny ViT: top-1 on the motion and "
        "appearance tasks, trainable parameters, inference FLOPs and the boundary b, mean ± std "
        "over seeds.",
        frozenset(absent),
    )


def strongest_uniform(params: dict[str, Any], runs: list[dict], task: str) -> str:
    """The uniform placement with the best mean top-1 on `task` (the first of equals)."""
    ran = [r for r in params["claims"]["uniform"] if not np.isnan(values(runs, task, r)).any()]
    if not ran:
        raise ValueError(f"strap: no uniform placement of claims.uniform ran on the {task} task")
    return max(ran, key=lambda r: float(values(runs, task, r).mean()))


def ts_trend(runs: list[dict]) -> dict[str, float]:
    """Per seed Spearman's ρ of the fine task's TS curve against depth."""
    from scipy.stats import spearmanr

    out = {}
    for run in runs:
        curve = run["tasks"]["fine"]["sensitivity"]["ts"]
        out[f"seed {run['seed']}"] = float(spearmanr(np.arange(len(curve)), curve).statistic)
    return out


def against(
    statement: str, task: str, rival: str, runs: list[dict], seeds: Sequence[int], **rule: float
) -> dict:
    """The paired check of STRAP's top-1 against `rival`'s on `task` (rule: alpha, margin,
    min_effect)."""
    return paired_check(
        statement,
        COLUMNS[task],
        "strap",
        rival,
        values(runs, task, "strap"),
        values(runs, task, rival),
        seeds,
        **rule,
    )


def claim_checks(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> list[dict]:
    """Claims 1-6 of the module docstring, then the parameter-count sanity check (7)."""
    rules = params["claims"]
    alpha, min_effect = float(rules["alpha"]), float(rules["min_effect"])
    fine_rival = strongest_uniform(params, runs, "fine")
    coarse_rival = strongest_uniform(params, runs, "coarse")
    checks = [
        bound_check(
            "Temporal sensitivity grows with depth.",
            "Spearman ρ of TS_l against block depth (fine task), per seed",
            ts_trend(runs),
            "at_least",
            float(rules["min_trend"]),
        ),
        against(
            f"Placement by the boundary rule beats uniform placement ({NAMES[fine_rival]}, the "
            "strongest) in accuracy on the fine-grained task.",
            "fine",
            fine_rival,
            runs,
            seeds,
            alpha=alpha,
            min_effect=min_effect,
        ),
    ]
    reduction, cost = {}, {}
    for rival in rules["parameter_baselines"]:
        ours = values(runs, "fine", "strap", "parameters")
        theirs = values(runs, "fine", rival, "parameters")
        reduction[NAMES[rival]] = float(np.min(100.0 * (1 - ours / theirs)))
        ratio = values(runs, "fine", "strap", "flops") / values(runs, "fine", rival, "flops")
        cost[NAMES[rival]] = float(np.max(ratio))
    checks += [
        bound_check(
            "STRAP needs 29-48 % fewer trainable parameters than uniform spatio-temporal "
            "placements.",
            "trainable-parameter reduction (%) against each placement, smallest over seeds",
            reduction,
            "at_least",
            float(rules["min_parameter_reduction"]),
        ),
        bound_check(
            "STRAP's inference is cheaper than uniform spatio-temporal placements.",
            "inference FLOPs per clip, STRAP over the placement's, largest over seeds",
            cost,
            "at_most",
            float(rules["max_cost_ratio"]),
        ),
        against(
            f"On the coarse task STRAP matches uniform placement ({NAMES[coarse_rival]}, the "
            "strongest).",
            "coarse",
            coarse_rival,
            runs,
            seeds,
            alpha=alpha,
            margin=float(rules["coarse_margin"]),
        ),
        tolerance_check(
            "The boundary rule's b* is close to the oracle b of the b-sweep.",
            "b* − oracle b (blocks), per seed",
            {
                f"seed {run['seed']}": float(
                    run["tasks"]["fine"]["sensitivity"]["boundary"]["segment"] - oracle(run)[0]
                )
                for run in runs
            },
            0.0,
            float(rules["oracle_tolerance"]),
        ),
        parameter_sanity(runs),
    ]
    return checks


def parameter_sanity(runs: list[dict]) -> dict:
    """Counted adapter parameters equal the closed form, for every row, task and seed."""
    mismatches = [
        f"seed {run['seed']} {task} {row}"
        for run in runs
        for task, result in run["tasks"].items()
        for row, e in result["rows"].items()
        if e["adapter_parameters"] != e["closed_form_parameters"]
    ]
    return sanity_check(
        "Every placement's trainable adapter parameters equal their closed form.",
        "adapter parameters, counted on the model and in closed form",
        "counted == closed form for every row, task and seed",
        not mismatches,
        {"mismatches": mismatches} if mismatches else None,
    )


def curve_stats(curves: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Per block the mean and sample std over seeds of per-seed curves, and the curves."""
    array = np.asarray(curves, dtype=float)
    spread = array.std(axis=0, ddof=1) if len(array) > 1 else np.zeros(array.shape[1])
    return {"mean": array.mean(axis=0), "std": spread, "per_seed": array}


def study_metrics(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> dict[str, Any]:
    """Per task and row every column's seed statistics; TS curves and boundaries per seed."""
    metrics: dict[str, Any] = {"seeds": list(seeds), "rows": {}, "sensitivity": {}}
    for row in rows_of(params):
        metrics["rows"][row] = {
            task: {
                key: seed_stats(values(runs, task, row, key))
                for key in ("accuracy", "parameters", "flops")
            }
            for task in ("fine", "coarse")
            if not np.isnan(values(runs, task, row)).all()
        }
    for task in ("fine", "coarse"):
        metrics["sensitivity"][task] = {
            key: curve_stats([run["tasks"][task]["sensitivity"][key] for run in runs])
            for key in ("ts", "cka", "random_ts")
        }
        metrics["sensitivity"][task]["boundaries"] = {
            rule: [run["tasks"][task]["sensitivity"]["boundary"][rule] for run in runs]
            for rule in ("segment", "threshold", "cka", "random")
        }
    metrics["oracle_b"] = [oracle(run)[0] for run in runs]
    metrics["sweep"] = {
        b: seed_stats([run["tasks"]["fine"]["sweep"][b]["accuracy"] for run in runs])
        for b in runs[0]["tasks"]["fine"]["sweep"]
    }
    return metrics


def curve_rows(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> pd.DataFrame:
    """Seed means of TS_l (series `ts`, `random_ts`, `cka`: x = block) and of the b-sweep's
    top-1 (series `sweep_top1`: x = b)."""
    points = []
    for key in ("ts", "random_ts", "cka"):
        curves = np.array([run["tasks"]["fine"]["sensitivity"][key] for run in runs])
        points += [(key, float(layer), float(v)) for layer, v in enumerate(curves.mean(0))]
    sweep = runs[0]["tasks"]["fine"]["sweep"]
    for b in sweep:
        mean = float(np.mean([run["tasks"]["fine"]["sweep"][b]["accuracy"] for run in runs]))
        points.append(("sweep_top1", float(b), mean))
    return curve_frame(points)
