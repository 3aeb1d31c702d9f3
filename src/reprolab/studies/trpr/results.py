"""The trpr table, claim checks and study metrics, from the per-seed metrics files.

Table: rows = NCM on the frozen backbone, the adapter baselines (single-adapter fine-tuning,
plain MoE adapters, the router frozen after the first task, the router-KL increment
regulariser, LwF and EWC on the adapters) and TRPR as the design card has it (projection in
training and at inference, with the gate) and as its prototype found it to work (projection at
inference only); per benchmark the columns are average and final accuracy (%), forgetting (%)
and the routing drift of old-task images (mean KL of their routing at the end of their task to
the end of the stream), then the trainable parameters (K). A column that does not apply to a
row (drift without a router) is "—".

"The strongest baseline" is, per benchmark and metric, the row of `claims.baselines` with the
best mean over the table's seeds (highest accuracy, lowest forgetting). Every rule and threshold
is in `trpr.claims`, fixed before the evaluation seeds were run; per benchmark:
1-6. Each TRPR variant (the inference-time projection, then the card's) beats the strongest
   baseline on average accuracy and on final accuracy, and forgets less (`paired`, one-sided
   paired t-tests over seeds, Holm within the study, a mean difference beyond
   `claims.min_effect`).
7. Routing drift causes forgetting (`paired`): on `claims.drift_row` (the plain MoE that drifts),
   giving old-task images back the routing they had at the end of their task raises their
   accuracy.
8. The asymmetry (`bound`): on `claims.drift_row`, the top drift quantile carries at least
   `claims.top_share` of the net loss, on every seed.
9. Small drift does not hurt (`bound`): on `claims.drift_row`, the bottom drift quantile's net
   loss rate is at most `claims.small_drift_loss`, on every seed.
10-11. Each TRPR variant's routing drifts less than `claims.drift_row`'s (`paired`).
12. The setting (`sanity`, never counted): the soft anchor's most weighted class belongs to the
   image's own task for fewer than `claims.ambiguous_identification` of the test images, so the
   anchors are not an oracle of task identity.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import bound_check, paired_check, sanity_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats

NAMES = {
    "ncm": "NCM (frozen, SimpleCIL)",
    "adapter_ft": "Adapter-SeqFT",
    "moe": "MoE adapters",
    "frozen_router": "MoE, router frozen after task 1",
    "router_kl": "MoE + router-KL penalty",
    "lwf": "LwF (adapters)",
    "ewc": "EWC (adapters)",
    "trpr_card": "TRPR, as carded (train + infer, gate)",
    "trpr_inference": "TRPR, inference projection",
}
BENCHMARK_NAMES = {
    "digitstyles": "DigitStyles",
    "cifar100": "CIFAR-100",
    "imagenet_r": "ImageNet-R",
    "cub": "CUB-200",
    "vtab": "VTAB",
}
MEASURES = {
    "average": "average acc (%)",
    "final": "final acc (%)",
    "forgetting": "forgetting (%)",
    "drift": "routing drift (KL)",
}
PERCENT = ("average", "final", "forgetting")
PARAMETERS = "trainable params (K)"
VARIANTS = ("trpr_inference", "trpr_card")
NOTES = __doc__.split("\n\n", 2)[2]

Runs = dict[str, list[dict[str, Any]]]
"""Per benchmark, the metrics.json of every seed, in seed order."""


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> Runs:
    """Per benchmark the metrics.json of every seed, in seed order; a file whose run names
    another benchmark or seed is an error naming it."""
    runs: Runs = {}
    for benchmark in params["benchmarks"]:
        runs[benchmark] = []
        for seed in seeds:
            path = Path(runs_dir) / benchmark / f"seed{seed}" / "metrics.json"
            run = read_json(path)
            if (run["benchmark"], run["seed"]) != (benchmark, seed):
                raise ValueError(f"{path}: holds the run of {run['benchmark']} seed {run['seed']}")
            runs[benchmark].append(run)
    return runs


def values(runs: list[dict], row: str, key: str) -> np.ndarray:
    """One value per seed of `key` for `row` (NaN where the row has no such value); the
    accuracy measures in %."""
    scale = 100.0 if key in PERCENT else 1.0
    return np.array([scale * r["rows"][row].get(key, np.nan) for r in runs], dtype=float)


def column(benchmark: str, key: str) -> str:
    """A table column: the benchmark's name and the measure."""
    return f"{BENCHMARK_NAMES[benchmark]}: {MEASURES[key]}"


def table(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> Table:
    """Rows = params `rows`; per benchmark the MEASURES, then the trainable parameters."""
    out, absent, columns = [], set(), []
    for benchmark, found in runs.items():
        for key in MEASURES:
            columns.append(column(benchmark, key))
            for row in params["rows"]:
                per_seed = values(found, row, key)
                if np.isnan(per_seed).all():
                    absent.add((NAMES[row], column(benchmark, key)))
                    continue
                out += [
                    Record(NAMES[row], column(benchmark, key), s, float(v))
                    for s, v in zip(seeds, per_seed, strict=True)
                ]
    columns.append(PARAMETERS)
    first = next(iter(runs.values()))
    for row in params["rows"]:
        out += [
            Record(NAMES[row], PARAMETERS, s, float(v) / 1e3)
            for s, v in zip(seeds, values(first, row, "parameters"), strict=True)
        ]
    return Table(
        out,
        [NAMES[r] for r in params["rows"]],
        columns,
        "TRPR against replay-free PEFT baselines on a frozen ViT, class-incremental: average and "
        "final accuracy, forgetting and the routing drift of old-task images, mean ± std over "
        "seeds.",
        frozenset(absent),
    )


def strongest(params: dict[str, Any], runs: list[dict], key: str) -> str:
    """The baseline of `claims.baselines` with the best mean `key` (lowest for forgetting)."""
    sign = -1.0 if key == "forgetting" else 1.0
    return max(
        params["claims"]["baselines"], key=lambda r: sign * float(values(runs, r, key).mean())
    )


def per_seed(seeds: Sequence[int], found: Sequence[float]) -> dict[str, float]:
    """{"seed s": value} for a bound check."""
    return {f"seed {s}": float(v) for s, v in zip(seeds, found, strict=True)}


def benchmark_checks(
    params: dict[str, Any], benchmark: str, runs: list[dict], seeds: Sequence[int]
) -> list[dict]:
    """Claims 1-12 of the module docstring on one benchmark."""
    rules = params["claims"]
    test = {"alpha": float(rules["alpha"]), "min_effect": float(rules["min_effect"])}
    where = BENCHMARK_NAMES[benchmark]
    checks = []
    for variant in VARIANTS:
        for key in PERCENT:
            rival = strongest(params, runs, key)
            better = "forgets less than" if key == "forgetting" else f"beats on {MEASURES[key]}"
            checks.append(
                paired_check(
                    f"{where}: {NAMES[variant]} {better} the strongest baseline ({NAMES[rival]}).",
                    column(benchmark, key),
                    variant,
                    rival,
                    values(runs, variant, key),
                    values(runs, rival, key),
                    seeds,
                    direction="less" if key == "forgetting" else "greater",
                    **test,
                )
            )
    drifting = rules["drift_row"]
    bins = [r["rows"][drifting]["drift_bins"] for r in runs]
    checks += [
        paired_check(
            f"{where}: routing drift causes forgetting: giving old-task images of "
            f"{NAMES[drifting]} their end-of-task routing back restores accuracy.",
            "accuracy on old-task test images (%), routing restored vs as it ends",
            f"{drifting} restored",
            f"{drifting} as it ends",
            100.0 * values(runs, drifting, "restored_accuracy"),
            100.0 * values(runs, drifting, "old_accuracy"),
            seeds,
            **test,
        ),
        bound_check(
            f"{where}: the forgetting is asymmetric: the top drift quantile of {NAMES[drifting]} "
            "carries most of the loss.",
            "the top drift quantile's share of the net loss on old-task test images, per seed",
            per_seed(seeds, [b["loss_share"][-1] for b in bins]),
            "at_least",
            float(rules["top_share"]),
        ),
        bound_check(
            f"{where}: small routing drift does not hurt: the bottom drift quantile of "
            f"{NAMES[drifting]} loses (almost) nothing.",
            "the bottom drift quantile's net loss rate (forgotten − recovered) per image, by seed",
            per_seed(seeds, [b["loss_rate"][0] for b in bins]),
            "at_most",
            float(rules["small_drift_loss"]),
        ),
    ]
    for variant in VARIANTS:
        checks.append(
            paired_check(
                f"{where}: {NAMES[variant]} reduces routing drift against {NAMES[drifting]}.",
                column(benchmark, "drift"),
                variant,
                drifting,
                values(runs, variant, "drift"),
                values(runs, drifting, "drift"),
                seeds,
                direction="less",
                **test,
            )
        )
    identified = values(runs, "trpr_inference", "task_identification")
    limit = float(rules["ambiguous_identification"])
    checks.append(
        sanity_check(
            f"{where}: task identity is ambiguous: class anchors are no oracle of the task.",
            "share of test images whose most weighted class (soft anchor) is of their own task",
            f"below {limit:g} on every seed",
            bool(np.all(identified < limit)),
            {"per_seed": [float(v) for v in identified]},
        )
    )
    return checks


def claim_checks(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> list[dict]:
    """The module docstring's claims, benchmark by benchmark."""
    return [
        check
        for benchmark, found in runs.items()
        for check in benchmark_checks(params, benchmark, found, seeds)
    ]


def mean_matrix(runs: list[dict], row: str) -> list[list[float]]:
    """The seed-mean accuracy matrix of `row` (lower triangle, row t: tasks 0..t), in %."""
    matrices = [r["rows"][row]["matrix"] for r in runs]
    return [
        [100.0 * float(np.mean([m[t][s] for m in matrices])) for s in range(t + 1)]
        for t in range(len(matrices[0]))
    ]


def bin_stats(runs: list[dict], row: str) -> dict[str, Any]:
    """Per drift quantile the seed statistics of the net loss rate and the loss share."""
    bins = [r["rows"][row]["drift_bins"] for r in runs]
    return {
        key: [seed_stats([b[key][q] for b in bins]) for q in range(len(bins[0][key]))]
        for key in ("edge", "loss_rate", "loss_share")
    }


ROW_MEASURES = (
    "average",
    "final",
    "forgetting",
    "parameters",
    "task_identification",
    "drift",
    "old_accuracy",
    "restored_accuracy",
    "gate_old",
)


def study_metrics(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> dict[str, Any]:
    """Per benchmark and row: the seed statistics of every measure it has, the mean accuracy
    matrix, the drift quantiles and the tuned values per seed's run."""
    metrics: dict[str, Any] = {"seeds": list(seeds), "benchmarks": {}}
    for benchmark, found in runs.items():
        rows = {}
        for row in params["rows"]:
            entry: dict[str, Any] = {
                key: seed_stats(values(found, row, key))
                for key in ROW_MEASURES
                if key in found[0]["rows"][row]
            }
            entry["matrix"] = mean_matrix(found, row)
            entry["values"] = found[0]["rows"][row]["values"]
            if "drift_bins" in found[0]["rows"][row]:
                entry["drift_bins"] = bin_stats(found, row)
            rows[row] = entry
        metrics["benchmarks"][benchmark] = {"tasks": len(found[0]["task_classes"]), "rows": rows}
    return metrics


def curve_rows(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> pd.DataFrame:
    """Seed means of the accuracy over seen tasks after each task (series
    `<benchmark>/<row>`, x = tasks learnt) and of each drift quantile's net loss rate (series
    `<benchmark>/<row>/loss_rate`, x = quantile, lowest drift first)."""
    points = []
    for benchmark, found in runs.items():
        for row in params["rows"]:
            for t, seen in enumerate(mean_matrix(found, row)):
                points.append((f"{benchmark}/{row}", float(t + 1), float(np.mean(seen))))
            if "drift_bins" in found[0]["rows"][row]:
                rates = bin_stats(found, row)["loss_rate"]
                points += [
                    (f"{benchmark}/{row}/loss_rate", float(q + 1), float(s["mean"]))
                    for q, s in enumerate(rates)
                ]
    return curve_frame(points)
