"""The vngct table, claim checks and study metrics, from the per-run metrics files.

Table (rows = methods, mean ± std over seeds): final and average accuracy, backward transfer,
visual and text forgetting (on the generator's visually necessary / text-answerable test
items), the projector's and the language side's share of the visual forgetting (swap
analysis: the drop on earlier visual tasks when only the projector, or only the rest, is the
final one), and per task the share of training samples that updated the projector (1 for
methods without a gate, 0 with the visual path frozen). When the runs were scored by declared
metrics (paper scale, `scoring`; the runs' `task_metrics`), each task's final score is a column
too, headed by the task and its metric ("final TextVQA (VQA acc)"), and final and average
accuracy are means over tasks of those scores; without them (smoke, ci) the table is as before.

Claims (all `paired`: one-sided paired t-tests over seeds, Holm-adjusted p < alpha within the
study, a mean difference above `claims.min_effect`; core.claims): the abstract's "improves
final and average performance while reducing visual forgetting", each against the strongest
baseline (SeqFT, freezing the visual path, the random gate, EWC: the best seed mean on that
score; for forgetting, the best of those that train the visual path, since a frozen path
forgets nothing there by construction); the card's controls: VNG-CT beats the random gate at
its own routing rate on final and average accuracy, and matches or beats freezing the visual
path (card A9: "the bar") within the margin `claims.match_margin` on final accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import paired_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats
from reprolab.studies.vngct.scoring import METRIC_LABELS
from reprolab.studies.vngct.spec import METHODS, STUDY

SCORES = {
    "final_accuracy": "final acc",
    "average_accuracy": "avg acc",
    "backward_transfer": "BWT",
    "visual_forgetting": "visual forgetting",
    "text_forgetting": "text forgetting",
    "projector_forgetting": "projector share",
    "language_forgetting": "language share",
}


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: str | Path) -> dict:
    """{method: [metrics.json of each seed]} for the methods of params."""
    root = Path(runs_dir)
    return {
        m: [read_json(root / m / f"seed{s}" / "metrics.json") for s in seeds]
        for m in params["methods"]
    }


def run_scores(run: dict[str, Any]) -> dict[str, float]:
    """The table's scores of one run, the swap shares included (NaN tasks skipped)."""
    swap = run["swap"]
    after = np.asarray(swap["after_task"], dtype=float)
    final_projector = np.asarray(swap["final_projector"], dtype=float)
    old_projector = np.asarray(swap["old_projector"], dtype=float)
    out = {key: float(run[key]) for key in SCORES if key in run}
    out["projector_forgetting"] = float(np.nanmean(after - final_projector))
    out["language_forgetting"] = float(np.nanmean(after - old_projector))
    return out


def task_metrics(runs: dict) -> dict[str, str]:
    """{task: metric} the runs were scored with (their `task_metrics`; {} when no run declares
    any, as at smoke and ci). ValueError naming the run when two runs disagree."""
    first = runs[next(iter(runs))][0].get("task_metrics", {})
    for method, method_runs in runs.items():
        for run in method_runs:
            declared = run.get("task_metrics", {})
            if declared != first:
                raise ValueError(
                    f"{method} seed {run['seed']}: scored with metrics {declared}, "
                    f"other runs with {first}"
                )
    return first


def task_column(task: str, metric: str) -> str:
    """The column of a task's final score, naming its metric."""
    return f"final {task} ({METRIC_LABELS[metric]})"


def final_task_scores(run: dict[str, Any]) -> dict[str, float]:
    """Each task's score after the last task (the last row of the accuracy matrix)."""
    return dict(zip(run["tasks"], run["accuracy"]["all"][-1], strict=True))


def routing_rates(method: str, run: dict[str, Any]) -> list[float]:
    """Share of each task's training samples that updated the projector: fixed for a method
    no gate routes (`spec.Method.fixed_routing_rate`), else as its run recorded it."""
    fixed = METHODS[method].fixed_routing_rate
    if fixed is not None:
        return [fixed] * len(run["tasks"])
    return [float(task["rate"]) for task in run["routing"]]


def per_seed(runs: dict, method: str, key: str) -> np.ndarray:
    """One table score of one method, one value per seed."""
    return np.asarray([run_scores(run)[key] for run in runs[method]], dtype=float)


def records(runs: dict, seeds: Sequence[int]) -> tuple[list[Record], list[str]]:
    """Long-format table records and the column order."""
    tasks = runs[next(iter(runs))][0]["tasks"]
    metrics = task_metrics(runs)
    per_task = {task: task_column(task, metrics[task]) for task in tasks if task in metrics}
    columns = [*SCORES.values(), *per_task.values(), *(f"routed: {task}" for task in tasks)]
    out = []
    for method, method_runs in runs.items():
        for seed, run in zip(seeds, method_runs, strict=True):
            values = run_scores(run)
            out += [Record(method, label, seed, values[key]) for key, label in SCORES.items()]
            finals = final_task_scores(run)
            out += [Record(method, label, seed, finals[task]) for task, label in per_task.items()]
            rates = routing_rates(method, run)
            out += [
                Record(method, f"routed: {t}", seed, r) for t, r in zip(tasks, rates, strict=True)
            ]
    return out, columns


def table(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> Table:
    """Rows = methods; the scores, each task's final score where metrics were declared, then
    the routed share per task."""
    table_records, columns = records(runs, seeds)
    caption = (
        "VNG-CT on the SynthCIT stream: accuracy (ranked among each task's answers), "
        "forgetting, and the share of samples that updated the projector per task."
    )
    if task_metrics(runs):
        caption = (
            f"VNG-CT on the {params['stream']} stream: final and average score (means over "
            "tasks of each task's metric, on greedily generated answers), forgetting, each "
            "task's final score by the metric its column names, and the share of samples that "
            "updated the projector per task."
        )
    return Table(table_records, list(params["methods"]), columns, caption)


BASELINES = ("seqft", "freeze_visual", "random_gate", "ewc")
"""The methods VNG-CT is compared with (vngct_nocal is its ablation, not a baseline)."""
VISUAL_TRAINING = ("seqft", "random_gate", "ewc")
"""Baselines that train the visual path: freezing it forgets nothing there by construction."""


def strongest(runs: dict, key: str, direction: str, among: Sequence[str]) -> str | None:
    """The method of `among` (those with runs) with the best seed mean on `key`: the highest
    for direction "greater", the lowest for "less"; chosen after the fact, so conservative."""
    present = [m for m in among if m in runs]
    if not present:
        return None
    means = {m: float(per_seed(runs, m, key).mean()) for m in present}
    pick = max if direction == "greater" else min
    return pick(present, key=lambda m: means[m])


def claim_checks(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict[str, Any]]:
    """The paired claims of the module docstring, for the methods present."""
    claims = params["claims"]
    if "vngct" not in runs:
        return []
    specs = []
    for key, what in (
        ("final_accuracy", "final accuracy"),
        ("average_accuracy", "average accuracy"),
    ):
        best = strongest(runs, key, "greater", BASELINES)
        if best is not None:
            specs.append(
                (
                    f"VNG-CT beats the strongest baseline ({best}) on {what}",
                    key,
                    best,
                    "greater",
                    0.0,
                )
            )
    best = strongest(runs, "visual_forgetting", "less", VISUAL_TRAINING)
    if best is not None:
        specs.append(
            (
                f"VNG-CT forgets less on visual items than the strongest baseline that trains the "
                f"visual path ({best})",
                "visual_forgetting",
                best,
                "less",
                0.0,
            )
        )
    specs += [
        ("VNG-CT beats the matched random gate on final accuracy (control)", "final_accuracy",
         "random_gate", "greater", 0.0),
        ("VNG-CT beats the matched random gate on average accuracy (control)", "average_accuracy",
         "random_gate", "greater", 0.0),
        (f"VNG-CT matches or beats freezing the visual path on final accuracy (within "
         f"{claims['match_margin']:g})", "final_accuracy", "freeze_visual", "greater",
         float(claims["match_margin"])),
    ]  # fmt: skip
    return [
        paired_check(
            statement,
            key,
            "vngct",
            baseline,
            per_seed(runs, "vngct", key),
            per_seed(runs, baseline, key),
            seeds,
            direction=direction,
            alpha=float(claims["alpha"]),
            margin=margin,
            min_effect=0.0 if margin else float(claims["min_effect"]),
        )
        for statement, key, baseline, direction, margin in specs
        if baseline in runs
    ]


def defined_stats(values: Sequence[float | None]) -> dict[str, Any]:
    """Mean and std over the seeds where a diagnostic is defined (not NaN), and their count.

    A gate's precision is undefined in a seed where it routed nothing, its recall where a task
    has no sample that needs the image; the mean over the other seeds is what can be said.
    """
    array = np.asarray(values, dtype=float)
    defined = array[~np.isnan(array)]
    return {
        "mean": float(defined.mean()) if defined.size else float("nan"),
        "std": float(defined.std(ddof=1)) if defined.size > 1 else 0.0,
        "seeds_defined": int(defined.size),
        "per_seed": array,
    }


def gate_diagnostics(runs: dict) -> dict[str, Any]:
    """Per gated method and task: routing rate, precision and recall over seeds."""
    out = {}
    for method, method_runs in runs.items():
        if METHODS[method].fixed_routing_rate is not None:
            continue
        tasks = method_runs[0]["tasks"]
        out[method] = {
            task: {
                key: defined_stats([run["routing"][i][key] for run in method_runs])
                for key in ("rate", "precision", "recall")
            }
            for i, task in enumerate(tasks)
        }
    return out


def held_out_diagnostics(runs: dict) -> dict[str, Any]:
    """Per method and task: the final model's held-out necessity (means and AUROC over seeds)."""
    return {
        method: {
            task: {
                key: defined_stats([run["held_out_necessity"][i][key] for run in method_runs])
                for key in ("visual_mean", "text_mean", "auroc")
            }
            for i, task in enumerate(method_runs[0]["tasks"])
        }
        for method, method_runs in runs.items()
    }


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: seed statistics of every score, the gates' and the held-out diagnostics;
    with declared metrics also each task's metric and the seed statistics of its final score."""
    out = {
        "study": STUDY,
        "seeds": list(seeds),
        "methods": {
            method: {key: seed_stats(per_seed(runs, method, key)) for key in SCORES}
            for method in params["methods"]
        },
        "gate": gate_diagnostics(runs),
        "held_out_necessity": held_out_diagnostics(runs),
    }
    metrics = task_metrics(runs)
    if metrics:
        out["task_metrics"] = metrics
        out["final_task_scores"] = {
            method: {
                task: seed_stats(np.asarray([final_task_scores(r)[task] for r in runs[method]]))
                for task in metrics
            }
            for method in params["methods"]
        }
    return out


def curve_rows(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: accuracy on the tasks seen so far after each task of the stream, seed mean.

    The continual-learning curve: after training on task t (x = t, from 1, in stream order),
    the mean accuracy (ranked among each task's answers, all test items) over tasks 1..t.
    Forgetting shows as the curve falling where a method loses earlier tasks; its mean over x is
    the table's average accuracy and its last point the final accuracy. One series per method
    (its id); rows are `x,series,y`, sorted by (series, x); `runs` is `load_runs`'s {method:
    [metrics.json of each seed]} (each with the task-by-task matrix `accuracy.all`).
    """
    points = []
    for method, method_runs in runs.items():
        seen = [
            [np.mean(row[: t + 1]) for t, row in enumerate(run["accuracy"]["all"])]
            for run in method_runs
        ]
        points += [(method, t + 1, float(y)) for t, y in enumerate(np.mean(seen, axis=0))]
    return curve_frame(points)


NOTES = (
    "Every claim is a one-sided paired t-test over the seeds listed (same seed = same batch "
    "order and adapter initialisation for every method), Holm-corrected within the study; a claim "
    "holds when the mean paired difference points the claimed way by more than the minimum "
    "effect (or, for 'matches or beats', trails by less than the margin) and the Holm-adjusted "
    "p < alpha. 'Strongest baseline' is the best by seed mean on that score, chosen after the "
    "run (conservative). The rules were fixed before any result was seen."
)
