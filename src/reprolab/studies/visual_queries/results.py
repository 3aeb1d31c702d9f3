"""The visual_queries table, claim checks and study metrics, from the per-run metrics files.

Runs live at ``<runs_dir>/<method>/seed<k>/metrics.json``. Table: rows = backends; per family
(TFR, VFP, CMD) the accuracy with text options, with visual options and the gap
Δ = text − visual (percentage points, mean ± std over seeds). Chance is 25 %.

Claims (fixed before any result was seen):

- the paper's claim, per learned model (`CLAIM_MODELS`) and family: accuracy with text options
  is higher than with visual options (one-sided paired t-test over seeds, alpha from params);
- benchmark check, well posed: the oracle scores 100 % on every family, mode and seed;
- benchmark check, no shortcuts: each option-only baseline (`blind`, which scores options one
  by one as the card asks, and `blind_set`, which compares them with each other) is within
  chance ± 3 binomial standard deviations (of the pooled test items over seeds) on every
  family and mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import claims_document, paired_check
from reprolab.core.io import read_json, write_json
from reprolab.core.tables import Record, curve_frame, seed_stats, summarize, write_table
from reprolab.studies.visual_queries.items import FAMILIES, N_OPTIONS
from reprolab.studies.visual_queries.views import MODES

CLAIM_MODELS = ("tinyvlm", "tinyvlm_textheavy", "caption_reason")
BLIND = ("blind", "blind_set")
CHANCE = 100.0 / N_OPTIONS
LABELS = {
    "oracle": "Oracle-symbolic",
    "blind": "Option-only blind",
    "blind_set": "Option-set blind (centroid)",
    "pixel_nn": "Pixel-NN heuristic",
    "caption_reason": "Caption-then-Reason",
    "tinyvlm": "TinyVLM (balanced modes)",
    "tinyvlm_textheavy": "TinyVLM-textheavy (90/10)",
}


def load_runs(methods: Sequence[str], seeds: Sequence[int], runs_dir: str | Path) -> dict:
    """{method: [metrics of each seed]} with a clear error when an accuracy is missing."""
    runs = {}
    for method in methods:
        runs[method] = []
        for seed in seeds:
            path = Path(runs_dir) / method / f"seed{seed}" / "metrics.json"
            metrics = read_json(path)
            missing = [f"{f}_acc_{m}" for f in FAMILIES for m in MODES] - metrics.keys()
            if missing:
                raise ValueError(f"{path}: run metrics lack {sorted(missing)}")
            runs[method].append(metrics)
    return runs


def per_seed(runs: dict, method: str, key: str) -> np.ndarray:
    """One metric of one method, one value per seed."""
    return np.asarray([run[key] for run in runs[method]], dtype=float)


def columns() -> list[str]:
    """Table columns in order."""
    return [f"{f.upper()}: {what}" for f in FAMILIES for what in ("text", "visual", "Δ")]


def records(runs: dict, methods: Sequence[str], seeds: Sequence[int]) -> list[Record]:
    """Long-format records of the table."""
    out = []
    for method in methods:
        for family in FAMILIES:
            text = per_seed(runs, method, f"{family}_acc_text")
            visual = per_seed(runs, method, f"{family}_acc_visual")
            for what, values in (("text", text), ("visual", visual), ("Δ", text - visual)):
                column = f"{family.upper()}: {what}"
                out += [
                    Record(LABELS[method], column, s, v) for s, v in zip(seeds, values, strict=True)
                ]
    return out


def curve_rows(runs: dict) -> pd.DataFrame:
    """curves.csv: accuracy (%) against the option mode, x = 0 text, 1 visual, seed mean.

    The runs record no per-step series (a learned backend keeps only its final loss), so the
    curve is the table's own axis: the same items answered with text options (x = 0), then
    with visual options (x = 1). Each series `<family>/<method>` (e.g. `tfr/tinyvlm`) is a
    two-point line whose drop is the table's Δ and the paper's claim; the oracle stays at 100
    and the option-only baselines at chance. Rows are `x,series,y`, sorted by (series, x);
    `runs` is `load_runs`'s {method: [metrics of each seed]}.
    """
    points = [
        (f"{family}/{method}", x, float(per_seed(runs, method, f"{family}_acc_{mode}").mean()))
        for method in runs
        for family in FAMILIES
        for x, mode in enumerate(MODES)
    ]
    return curve_frame(points)


def _benchmark_check(
    statement: str, values: dict[str, list[float]], holds: bool, rule: str
) -> dict:
    return {
        "statement": statement,
        "kind": "benchmark check",
        "rule": rule,
        "values": values,
        "holds": holds,
    }


def claim_checks(runs: dict, seeds: Sequence[int], alpha: float) -> list[dict[str, Any]]:
    """The checks of the module docstring."""
    checks = []
    for method in [m for m in CLAIM_MODELS if m in runs]:
        for family in FAMILIES:
            checks.append(
                paired_check(
                    f"{LABELS[method]} scores lower with visual options than with text options "
                    f"({family.upper()})",
                    f"{family.upper()} accuracy (%)",
                    f"{method}:text",
                    f"{method}:visual",
                    per_seed(runs, method, f"{family}_acc_text"),
                    per_seed(runs, method, f"{family}_acc_visual"),
                    seeds,
                    alpha=alpha,
                )
            )
    if "oracle" in runs:
        values = {
            f"{f}_{m}": per_seed(runs, "oracle", f"{f}_acc_{m}").tolist()
            for f in FAMILIES
            for m in MODES
        }
        perfect = all(v == 100.0 for vs in values.values() for v in vs)
        checks.append(
            _benchmark_check(
                "the oracle scores 100 % on every family and mode (the benchmark is well posed)",
                values,
                perfect,
                "every seed exactly 100 %",
            )
        )
    for method in [m for m in BLIND if m in runs]:
        n = np.asarray([run["n_test"] for run in runs[method]], dtype=float).sum() / len(FAMILIES)
        sigma = 100.0 * np.sqrt(CHANCE / 100 * (1 - CHANCE / 100) / n)
        values, inside = {}, True
        for family in FAMILIES:
            for mode in MODES:
                mean = float(per_seed(runs, method, f"{family}_acc_{mode}").mean())
                values[f"{family}_{mode}"] = [mean]
                inside &= abs(mean - CHANCE) <= 3 * sigma
        checks.append(
            _benchmark_check(
                f"{LABELS[method]} is at chance on every family and mode (no shortcuts)",
                values,
                bool(inside),
                f"mean over seeds within {CHANCE:.0f} ± 3σ, σ = {sigma:.2f} points "
                f"(binomial, ~{n:.0f} pooled test items per family)",
            )
        )
    return checks


def study_metrics(runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: per method and key the mean, std and per-seed values of every number
    (nested diagnostics such as the captioner's accuracy flattened to `captioner.colour`)."""
    out: dict[str, Any] = {"seeds": list(seeds), "methods": {}}
    for method, seed_runs in runs.items():
        flat = [_numbers(run) for run in seed_runs]
        out["methods"][method] = {
            key: seed_stats([run[key] for run in flat]) for key in sorted(flat[0]) if key != "seed"
        }
    return out


def _numbers(metrics: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """The numbers of a run's metrics, nested ones as `outer.inner` (e.g. captioner.colour)."""
    out = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            out.update(_numbers(value, f"{prefix}{key}."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[f"{prefix}{key}"] = value
    return out


NOTES = (
    "The text-vs-visual claims are one-sided paired t-tests over the seeds listed (the same seed "
    "gives both modes the same items and the same trained model); a claim holds when the mean "
    "difference points the claimed way and p < alpha. The oracle and option-only rows are checks "
    "of the benchmark, reported beside the claim. The rule was fixed before any result was seen."
)


def summarize_study(
    methods: Sequence[str],
    seeds: Sequence[int],
    alpha: float,
    digits: int,
    runs_dir: str | Path,
    out_dir: str | Path,
) -> None:
    """Write table.{csv,md,tex}, claims.json and metrics.json of the study into out_dir."""
    runs = load_runs(methods, seeds, runs_dir)
    summary = summarize(records(runs, methods, seeds), [LABELS[m] for m in methods], columns())
    out = Path(out_dir)
    write_table(
        summary,
        out / "table",
        digits,
        "visual_queries: accuracy (%) with text and visual options per family, and the gap "
        "Δ = text − visual (mean ± std over seeds; chance 25 %)",
    )
    write_json(
        out / "claims.json",
        claims_document("visual_queries", claim_checks(runs, seeds, alpha), NOTES),
    )
    write_json(out / "metrics.json", study_metrics(runs, seeds))
