"""The ntm table, claim checks, study metrics and curves, from the per-job files.

Table: rows = FM-Euler-<reference> (the many-step reference), FM-Euler-K, Gauss-K, CD-K, NTM-K,
NTM-K+Tweedie and NTM-K+SD (jobs.row_names); per dataset the columns: sliced Wasserstein
distance (×10²) and MMD² (×10³) of the samples to the seed's test set, the modes covered
(8gauss only) and the share of samples near a mode or inside the checkerboard's support, the
exact trajectory NLL (nats per trajectory dimension; the trajectory models only) and the
network evaluations per sample. With one dataset the columns carry no prefix.

Claims per dataset, in the abstract's order (paired checks are one-sided paired t-tests over the
seeds, Holm-corrected within the study; every method of a seed trained on the same data and
batches):
1. `paired`, non-inferiority: NTM-K's SWD is below the best few-step baseline's plus
   `claims.swd_margin`; the best baseline is the one of FM-Euler-K, Gauss-K and CD-K with the
   lowest mean SWD on the evaluation seeds (the hardest comparison for NTM, not a choice in
   its favour);
2. the same on MMD² with `claims.mmd_margin`;
3. `paired`: the Gaussian bottleneck: NTM-K's SWD is below Gauss-K's (same predictor, same
   likelihood training, identity transporter);
4. `paired`: NTM-K's exact trajectory NLL is below Gauss-K's;
5. `paired`: self-distillation improves NTM: NTM-K+SD's SWD is below NTM-K's;
6. `sanity`: the trajectory NLL is exact: every transporter's log-determinant equals the
   log|det| of autograd's Jacobian within `claims.exactness_tolerance` (float64, every seed).
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
from reprolab.studies.ntm.workflow_io import row_names

COLUMNS = {
    "swd": ("SWD (x1e2)", 1e2),
    "mmd": ("MMD (x1e3)", 1e3),
    "modes_covered": ("modes covered", 1.0),
    "in_support": ("in support", 1.0),
    "trajectory_nll": ("traj NLL", 1.0),
    "nfe": ("NFE", 1.0),
}
"""metrics.json key of a row → (table column, scale)."""
FEW_STEP_BASELINES = ("fm", "gauss", "cd")
SWD_METRIC = "sliced Wasserstein distance"
NOTES = (
    "Every trained method ran at the learning rate its tuning job selected on the tuning seeds "
    "(disjoint from the evaluation seeds; metrics.json `tuning`), every method of a seed on the "
    "same training set and batches, so metrics pair by seed. Paired checks are one-sided "
    "paired t-tests over the seeds listed, Holm-corrected within the study; they hold when the "
    "mean difference points the claimed way by more than min_effect (beyond the margin for the "
    "non-inferiority checks) and the adjusted p < alpha. The best few-step baseline is the one "
    "with the lowest mean on the evaluation seeds, the hardest comparison for NTM. The "
    "exactness check holds by construction when the code is right: shown, not counted."
)


def run_path(runs_dir: str | Path, dataset: str, seed: int) -> Path:
    """Where the job of (dataset, seed) writes its metrics.json."""
    return Path(runs_dir) / dataset / f"seed{seed}" / "metrics.json"


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: str | Path) -> dict:
    """{"jobs": {dataset: [metrics.json per seed]}, "curves": {dataset: [curves.h5 per seed]}}."""
    jobs, curves = {}, {}
    for dataset in params["datasets"]:
        paths = [run_path(runs_dir, dataset, s) for s in seeds]
        jobs[dataset] = [read_json(p) for p in paths]
        curves[dataset] = [read_h5(p.with_name("curves.h5")) for p in paths]
    return {"jobs": jobs, "curves": curves}


def values(runs: dict, dataset: str, name: str, key: str) -> np.ndarray:
    """One value per seed of row `name`'s `key` on `dataset` (NaN where it does not apply)."""
    out = [job["rows"][name].get(key) for job in runs["jobs"][dataset]]
    return np.asarray([np.nan if v is None else v for v in out], dtype=float)


def column(params: dict[str, Any], dataset: str, key: str) -> str:
    """A table column; prefixed by the dataset when the study has several."""
    prefix = f"{dataset}: " if len(params["datasets"]) > 1 else ""
    return prefix + COLUMNS[key][0]


def table(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> Table:
    """Rows = the methods; per dataset the columns of the module docstring."""
    names = list(row_names(params).values())
    out, absent = [], set()
    for dataset in params["datasets"]:
        for name in names:
            for key, (_, scale) in COLUMNS.items():
                per_seed = values(runs, dataset, name, key)
                if np.all(np.isnan(per_seed)):
                    absent.add((name, column(params, dataset, key)))
                    continue
                out += [
                    Record(name, column(params, dataset, key), seed, float(scale * v))
                    for seed, v in zip(seeds, per_seed, strict=True)
                ]
    return Table(
        out,
        names,
        [column(params, d, key) for d in params["datasets"] for key in COLUMNS],
        "Few-step generative models on 2-D benchmarks: flow matching (Euler, many and K steps), "
        "Gaussian reverse steps, consistency distillation, the normalizing trajectory model "
        "(every reverse step a conditional flow) and its self-distilled denoiser: sliced "
        "Wasserstein and MMD to held-out data, mode coverage and support, exact trajectory NLL "
        "and network evaluations per sample, mean ± std over seeds.",
        frozenset(absent),
    )


def best_baseline(params: dict[str, Any], runs: dict, dataset: str, key: str) -> str:
    """The few-step baseline row with the lowest mean `key` on `dataset` (ties: table order)."""
    names = row_names(params)
    means = {
        names[m]: float(np.mean(values(runs, dataset, names[m], key))) for m in FEW_STEP_BASELINES
    }
    return min(means, key=means.get)


def claim_checks(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict]:
    """The checks of the module docstring, for every dataset."""
    return [c for d in params["datasets"] for c in dataset_checks(params, runs, seeds, d)]


def dataset_checks(
    params: dict[str, Any], runs: dict, seeds: Sequence[int], dataset: str
) -> list[dict]:
    """Claims 1-6 on one dataset."""
    spec, names = params["claims"], row_names(params)
    ntm, gauss, sd = names["ntm"], names["gauss"], names["sd"]
    checks = []

    def lower(statement: str, metric: str, key: str, row: str, baseline: str, margin=0.0):
        """Paired one-sided check: `row`'s `key` below `baseline`'s (+ margin)."""
        return paired_check(
            f"{statement} ({dataset})",
            metric,
            row,
            baseline,
            values(runs, dataset, row, key),
            values(runs, dataset, baseline, key),
            seeds,
            direction="less",
            alpha=spec["alpha"],
            min_effect=spec["min_effect"],
            margin=float(margin),
        )

    for key, metric, margin in (
        ("swd", SWD_METRIC, spec["swd_margin"]),
        ("mmd", "MMD² (RBF)", spec["mmd_margin"]),
    ):
        best = best_baseline(params, runs, dataset, key)
        checks.append(
            lower(
                f"With {len(params['times']) - 1} steps NTM samples as well as or better "
                f"than the best few-step baseline ({best}): {metric} below the baseline's "
                f"plus {margin:g}",
                metric,
                key,
                ntm,
                best,
                margin,
            )
        )
    checks += [
        lower(
            "A flow per reverse step removes the Gaussian bottleneck: NTM's sliced "
            "Wasserstein distance is below the Gaussian-step model's",
            SWD_METRIC,
            "swd",
            ntm,
            gauss,
        ),
        lower(
            "NTM's exact trajectory NLL is below the Gaussian-step model's",
            "trajectory NLL (nats/dim)",
            "trajectory_nll",
            ntm,
            gauss,
        ),
        lower(
            "A self-distilled denoiser improves NTM's samples: lower sliced Wasserstein "
            "distance than NTM's rescaled samples",
            SWD_METRIC,
            "swd",
            sd,
            ntm,
        ),
        exactness_check(spec, runs, dataset, seeds),
    ]
    return checks


def exactness_check(spec: dict[str, Any], runs: dict, dataset: str, seeds: Sequence[int]) -> dict:
    """Claim 6 (sanity): every seed's largest log-determinant error within the tolerance."""
    errors = [float(job["log_det_error"]) for job in runs["jobs"][dataset]]
    tolerance = float(spec["exactness_tolerance"])
    return sanity_check(
        f"NTM's trajectory NLL is exact: its log-determinants match autograd Jacobians ({dataset})",
        "largest |log-det error| (float64)",
        f"every seed's largest error ≤ {tolerance:g}",
        max(errors) <= tolerance,
        {"per_seed": dict(zip(map(str, seeds), errors, strict=True))},
    )


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: per dataset and row the seed statistics of every measured value, the best
    few-step baselines, the learning rates the jobs ran with and NTM's exactness errors."""
    out: dict[str, Any] = {
        "seeds": list(seeds),
        "hyperparameters": runs["jobs"][next(iter(params["datasets"]))][0]["hyperparameters"],
    }
    for dataset in params["datasets"]:
        entry: dict[str, Any] = {"rows": {}}
        for name in row_names(params).values():
            entry["rows"][name] = {
                key: seed_stats(values(runs, dataset, name, key))
                for key in COLUMNS
                if not np.all(np.isnan(values(runs, dataset, name, key)))
            }
        entry["best_baseline"] = {
            k: best_baseline(params, runs, dataset, k) for k in ("swd", "mmd")
        }
        entry["log_det_error"] = [float(job["log_det_error"]) for job in runs["jobs"][dataset]]
        out[dataset] = entry
    return out


def curve_rows(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: each trained model's training loss per logged window (x = step at the
    window's end), mean over seeds, series `<dataset>/<model>` (fm, cd, gauss, ntm: the
    trajectory NLL in nats/dim; sd: the denoiser's squared error)."""
    points = []
    for dataset in params["datasets"]:
        jobs = runs["curves"][dataset]
        for model in sorted(jobs[0]):
            every, steps = _window(params, model)
            mean = np.mean([job[model] for job in jobs], axis=0)
            points += [
                (f"{dataset}/{model}", float(min((k + 1) * every, steps)), float(v))
                for k, v in enumerate(mean)
            ]
    return curve_frame(points)


def _window(params: dict[str, Any], model: str) -> tuple[int, int]:
    """(log_every, steps) of a model's training."""
    budget = params["distillation"] if model == "sd" else params["budget"]
    steps = budget["fm_steps"] if model == "fm" else budget["steps"]
    return int(budget["log_every"]), int(steps)
