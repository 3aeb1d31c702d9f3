"""The icl_manifold table, rate slopes, claim checks and study metrics, from the per-seed runs.

A run is ``<runs_dir>/seed<k>/errors.h5`` (per setting: squared errors (methods, sizes,
prompts)) beside ``training.json`` (each network's losses and optimiser settings, its learning
rate the one its tuning record selected); the classical tuning jobs write
``data/icl_manifold/tuning/<setting>.json``, the network tuning jobs core.tuning records
``data/icl_manifold/tuning/networks/<method>.json`` (summarized by core.summary, not here).

Slopes: per seed, method and setting the least-squares slope of log MSE against log n (for a
growing-component setting against log(n / J_n), the points per component, where the theory
applies), with a percentile bootstrap interval over that seed's prompts (`rates`); the table
shows mean ± std of the per-seed slopes, metrics.json also the pooled-seed slope and interval.

Table: rows = methods; per setting the MSE at the smallest and the largest n and the fitted
slope, whose column name carries the theory slope −2α/(2α + d_max).

Claims (core.claims; the rule of each fixed before any evaluation-seed result was seen; the
`paired` ones are one-sided paired t-tests over seeds, Holm-adjusted within the study, and need
a mean difference above a minimum effect besides the p-value):
1. `tolerance`, per setting: the oracle's mean slope over seeds is within `slope_tolerance`
   of the theory;
2. `paired`: the oracle's slope is steeper on the lower-dimensional setting of
   `dimension_pair` (circles, d = 1) than on the other (spheres, d = 2), by more than
   `slope_min_effect`;
3. `bound`: in the mixed setting the two-stage network tracks the oracle: its mean MSE over the
   oracle's, minus 1, is at most `gap_tolerance` at every n (card: 20 %);
4. `paired`: in the mixed setting the two-stage network beats the unstructured linear
   transformer (trained at the same budget, its learning rate tuned as the two-stage
   network's is) on log MSE at the largest n, by more than `claims.min_effect`;
5. `paired`: … and beats each classical baseline (kNN, Nadaraya–Watson, ambient local-linear)
   there, likewise;
6. `paired`: kNN's slope is shallower than the oracle's in the mixed setting (card), by more
   than `slope_min_effect`.

Minimum effects. `claims.min_effect` is in natural-log MSE: the MSE claims compare log MSE per
seed (a paired difference is a log MSE ratio; 0.1 asks for a ≥ 9.5 % lower geometric-mean MSE).
A slope is d log MSE / d log n, so a slope difference s changes the log MSE ratio by
s · ln(n_max / n_min) across the fitted range: the slope claims ask for the same effect there,
s > min_effect / ln(n_max / n_min) (`slope_min_effect`, on the setting's rate axis).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from reprolab.core.claims import bound_check, paired_check, tolerance_check
from reprolab.core.determinism import derive_seed
from reprolab.core.io import read_json
from reprolab.core.layout import data_dir
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats
from reprolab.studies.icl_manifold.manifolds import KIND_DIM, component_count
from reprolab.studies.icl_manifold.rates import slope_summary, theory_slope
from reprolab.studies.icl_manifold.spec import STUDY, setting_spec

METHOD, UNSTRUCTURED, ORACLE = "twostage_tf", "lintf", "oracle_lp"
BASELINES = ("knn", "nw", "ambient_ll")


def read_errors(path: str | Path) -> tuple[list[str], dict[str, np.ndarray]]:
    """(methods, {setting: squared errors (methods, sizes, prompts)}) of one run."""
    with h5py.File(path, "r") as handle:
        methods = [str(m) for m in handle.attrs["methods"]]
        return methods, {name: handle[name][()] for name in handle}


def load_errors(
    params: dict[str, Any], seeds: Sequence[int], runs_dir: str | Path
) -> dict[str, dict[str, np.ndarray]]:
    """{setting: {method: errors (seeds, sizes, prompts)}} for the configured methods."""
    per_seed = []
    for seed in seeds:
        path = Path(runs_dir) / f"seed{seed}" / "errors.h5"
        methods, errors = read_errors(path)
        missing = [m for m in params["methods"] if m not in methods]
        if missing:
            raise ValueError(f"{path}: no errors for methods {missing}")
        per_seed.append(
            {
                s: {m: errors[s][methods.index(m)] for m in params["methods"]}
                for s in params["settings"]
            }
        )
    return {
        s: {m: np.stack([run[s][m] for run in per_seed]) for m in params["methods"]}
        for s in params["settings"]
    }


def tuning_dir() -> Path:
    """Where the tuning jobs write `<setting>.json` (relative to the working directory)."""
    return data_dir(STUDY) / "tuning"


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: str | Path) -> dict:
    """What the summary reads: {"errors": `load_errors`, "training": [training.json of each
    seed], "tuned": {setting: its tuning file}, "slopes": `slopes` of the errors}. The slopes
    (bootstrap refits) are computed once here, since table, claims and metrics all read them."""
    errors = load_errors(params, seeds, runs_dir)
    return {
        "errors": errors,
        "training": [read_json(Path(runs_dir) / f"seed{s}" / "training.json") for s in seeds],
        "tuned": {s: read_json(tuning_dir() / f"{s}.json") for s in params["settings"]},
        "slopes": slopes(params, errors, seeds),
    }


def rate_axis(params: dict[str, Any], setting: str) -> np.ndarray:
    """The x-axis of a setting's rate fit: n, or n / J_n when the component count grows."""
    spec = setting_spec(params, setting)
    return np.asarray(
        [n / component_count(spec, n) if spec["grow_components"] else n for n in params["sizes"]],
        dtype=float,
    )


def setting_theory(params: dict[str, Any], setting: str) -> float:
    """Theory slope of a setting: −2α/(2α + the largest intrinsic dimension of its kinds)."""
    spec = setting_spec(params, setting)
    return theory_slope(spec["alpha"], [KIND_DIM[k] for k in spec["kinds"]])


def slopes(
    params: dict[str, Any], errors: dict, seeds: Sequence[int]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per setting and method: per-seed slope summaries and the pooled-seed one."""
    cfg = params["slopes"]
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for setting, methods in errors.items():
        x = rate_axis(params, setting)
        for method, values in methods.items():
            per = [
                slope_summary(
                    x,
                    values[i],
                    cfg["resamples"],
                    cfg["level"],
                    np.random.default_rng(derive_seed(s, STUDY, "boot", setting, method)),
                )
                for i, s in enumerate(seeds)
            ]
            pooled_errors = np.concatenate(list(values), axis=-1)
            pooled = slope_summary(
                x,
                pooled_errors,
                cfg["resamples"],
                cfg["level"],
                np.random.default_rng(derive_seed(0, STUDY, "boot", setting, method, "pooled")),
            )
            out.setdefault(setting, {})[method] = {
                "per_seed": {k: [p[k] for p in per] for k in per[0]},
                "pooled": pooled,
            }
    return out


def mse(errors: dict, setting: str, method: str) -> np.ndarray:
    """MSE per seed and n: (seeds, sizes), from `load_errors`' {setting: {method: errors}}."""
    return errors[setting][method].mean(-1)


def curve_rows(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: MSE against the context length n, one series `<setting>/<method>`, seed mean.

    The study's result is this curve, not a training curve (training.json's per-step losses are
    two networks' fits to noisy targets, not the evaluation): the table keeps its two ends and
    its log-log slope, and every claim is read off it. x = n (the `sizes` of params, not the
    n / J_n of a growing setting's rate fit), y = the mean squared error over the prompts and
    seeds. Rows are `x,series,y`, sorted by (series, x); `runs["errors"]` is `load_errors`'
    {setting: {method: errors (seeds, sizes, prompts)}}.
    """
    points = []
    errors = runs["errors"]
    for setting, methods in errors.items():
        for method in methods:
            values = mse(errors, setting, method).mean(0)
            points += [
                (f"{setting}/{method}", int(n), float(y))
                for n, y in zip(params["sizes"], values, strict=True)
            ]
    return curve_frame(points)


def columns(params: dict[str, Any]) -> list[str]:
    """Table columns: per setting MSE at the smallest and largest n, and the slope."""
    lo, hi = params["sizes"][0], params["sizes"][-1]
    out = []
    for setting in params["settings"]:
        theory = setting_theory(params, setting)
        out += [
            f"{setting}: MSE n={lo}",
            f"{setting}: MSE n={hi}",
            f"{setting}: slope (theory {theory:.3f})",
        ]
    return out


def records(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[Record]:
    """Long-format table records."""
    cols = columns(params)
    out = []
    for k, setting in enumerate(params["settings"]):
        for method in params["methods"]:
            values = mse(runs["errors"], setting, method)
            slope = runs["slopes"][setting][method]["per_seed"]["slope"]
            for i, seed in enumerate(seeds):
                out += [
                    Record(method, cols[3 * k], seed, values[i, 0]),
                    Record(method, cols[3 * k + 1], seed, values[i, -1]),
                    Record(method, cols[3 * k + 2], seed, slope[i]),
                ]
    return out


def table(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> Table:
    """Rows = methods; per setting MSE at the smallest and largest n and the slope."""
    return Table(
        records(params, runs, seeds),
        list(params["methods"]),
        columns(params),
        "In-context regression on mixtures of manifolds: MSE at the smallest and largest "
        "context length and the fitted log-log rate slope, mean ± std over seeds.",
    )


def slope_min_effect(params: dict[str, Any], *settings: str) -> float:
    """The minimum slope difference of a slope claim: `claims.min_effect` (natural-log MSE)
    over the log range of the rate axis, the largest over `settings` (the strictest)."""
    spans = []
    for setting in settings:
        x = rate_axis(params, setting)
        spans.append(math.log(x[-1] / x[0]))
    return float(params["claims"]["min_effect"]) / min(spans)


def relative_gap(errors: dict, setting: str, method: str) -> np.ndarray:
    """Per seed and n: MSE_method / MSE_oracle − 1."""
    return mse(errors, setting, method) / mse(errors, setting, ORACLE) - 1.0


def claim_checks(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict[str, Any]]:
    """The claims of the module docstring."""
    claims, checks = params["claims"], []
    alpha, mixed, min_effect = claims["alpha"], claims["mixed"], float(claims["min_effect"])
    methods, errors, fitted = params["methods"], runs["errors"], runs["slopes"]
    for setting in params["settings"]:
        fit = fitted[setting][ORACLE]
        theory = setting_theory(params, setting)
        pooled = fit["pooled"]
        per_seed = np.asarray(fit["per_seed"]["slope"], dtype=float)
        checks.append(
            tolerance_check(
                f"1. the oracle's slope is within {claims['slope_tolerance']} of the theory "
                f"{theory:.3f} ({setting})",
                f"{setting}: slope",
                {f"{ORACLE} mean slope over seeds": float(per_seed.mean())},
                theory,
                claims["slope_tolerance"],
                {
                    "seeds": list(seeds),
                    "per_seed": per_seed.tolist(),
                    "std": float(per_seed.std(ddof=1)) if per_seed.size > 1 else 0.0,
                    "pooled_slope": pooled["slope"],
                    "pooled_ci": [pooled["ci_low"], pooled["ci_high"]],
                    "theory_in_pooled_ci": bool(pooled["ci_low"] <= theory <= pooled["ci_high"]),
                },
            )
        )
    low, high = claims["dimension_pair"]
    checks.append(
        paired_check(
            f"2. the oracle's slope is steeper on {low} (lower d) than on {high}",
            "slope",
            low,
            high,
            fitted[low][ORACLE]["per_seed"]["slope"],
            fitted[high][ORACLE]["per_seed"]["slope"],
            seeds,
            direction="less",
            alpha=alpha,
            min_effect=slope_min_effect(params, low, high),
        )
    )
    if METHOD in methods:
        gaps = relative_gap(errors, mixed, METHOD)
        checks.append(
            bound_check(
                f"3. the two-stage network's MSE is within {100 * claims['gap_tolerance']:g} % "
                f"of the oracle's at every n ({mixed})",
                f"{mixed}: relative gap",
                {f"n={n}": g for n, g in zip(params["sizes"], gaps.mean(0).tolist(), strict=True)},
                "at_most",
                float(claims["gap_tolerance"]),
                {"seeds": list(seeds), "per_seed_max_gap": gaps.max(1).tolist()},
            )
        )
        largest = f"{mixed}: log MSE n={params['sizes'][-1]}"
        others = [(m, "4.") for m in (UNSTRUCTURED,) if m in methods]
        others += [(m, "5.") for m in BASELINES if m in methods]
        for other, number in others:
            checks.append(
                paired_check(
                    f"{number} the two-stage network beats {other} on MSE at the largest n "
                    f"({mixed}; log MSE ratio > {min_effect:g})",
                    largest,
                    METHOD,
                    other,
                    np.log(mse(errors, mixed, METHOD)[:, -1]),
                    np.log(mse(errors, mixed, other)[:, -1]),
                    seeds,
                    direction="less",
                    alpha=alpha,
                    min_effect=min_effect,
                )
            )
    if "knn" in methods:
        checks.append(
            paired_check(
                f"6. kNN's slope is shallower than the oracle's ({mixed})",
                f"{mixed}: slope",
                "knn",
                ORACLE,
                fitted[mixed]["knn"]["per_seed"]["slope"],
                fitted[mixed][ORACLE]["per_seed"]["slope"],
                seeds,
                direction="greater",
                alpha=alpha,
                min_effect=slope_min_effect(params, mixed),
            )
        )
    return checks


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: MSE per n, slopes (per seed, pooled, intervals), gaps, training, tuning."""
    errors, fitted = runs["errors"], runs["slopes"]
    training, tuned = runs["training"], runs["tuned"]
    out: dict[str, Any] = {"seeds": list(seeds), "sizes": list(params["sizes"]), "settings": {}}
    for setting in params["settings"]:
        entry: dict[str, Any] = {
            "theory_slope": setting_theory(params, setting),
            "rate_axis": rate_axis(params, setting),
            "methods": {},
        }
        for method in params["methods"]:
            values = mse(errors, setting, method)
            entry["methods"][method] = {
                "mse": [seed_stats(values[:, i]) for i in range(values.shape[1])],
                "slope": fitted[setting][method],
                "relative_gap_to_oracle": relative_gap(errors, setting, method).mean(0),
            }
        out["settings"][setting] = entry
    out["training"] = {
        method: {
            key: seed_stats([run[method][key] for run in training])
            for key in ("first_loss", "last_loss")
        }
        | {
            "parameters": training[0][method]["parameters"],
            "optimiser": training[0][method]["optimiser"],
        }
        for method in training[0]
    }
    out["tuned"] = {s: {k: v for k, v in t.items() if k != "tuning_mse"} for s, t in tuned.items()}
    return out


NOTES = (
    "Slopes are least-squares fits of log MSE on log n (log points per component where the "
    "component count grows), per seed, with percentile bootstrap intervals over prompts in "
    "metrics.json. Tolerance claims hold when the mean slope over seeds is within the stated "
    "tolerance of the theory, the gap claim when the two-stage network's relative gap to the "
    "oracle is at most the stated share at every n; comparisons are one-sided paired t-tests "
    "over seeds (same seed = same training pool and evaluation prompts), Holm-corrected within "
    "the study, holding when the mean difference points the claimed way by more than the "
    "minimum effect and the Holm-adjusted p < alpha. MSE comparisons are on log MSE (the "
    "minimum effect is a log MSE ratio: 0.1 = about 9.5 % lower MSE); a slope comparison's "
    "minimum effect is the same log ratio spread over the fitted range of n. Both networks "
    "train at the same budget (steps, batch, clip), each with the learning rate its tuning job "
    "selected on the tuning seeds, which no table shows. Rules, tolerances and minimum effects "
    "were fixed before any evaluation-seed result was seen."
)
