"""The visual_queries table, claim checks and study metrics, from the per-run metrics files.

Runs live at ``<runs_dir>/<method>/seed<k>/metrics.json``. Table: rows = backends; per family
(TFR, VFP, CMD) the accuracy with text options, with visual options and the gap
Δ = text − visual (percentage points, mean ± std over seeds). Chance is 25 %.

Claims (core.claims kinds; rules fixed in params before the evaluation seeds are run):

- `paired`, the paper's claim, per model of `CLAIM_MODELS` that is run (the learned backends
  and, at paper scale, `hf_vlm`) and family: accuracy with text options is higher than with
  visual options by more than `claims.min_effect` accuracy points (mean of text − visual over
  seeds > min_effect, and a one-sided paired t-test over seeds with Holm-adjusted
  p < `claims.alpha` over the study's paired checks);
- `sanity`, items well posed: the oracle, which reads the symbolic state behind every option
  (it parses the sentence in text mode and takes the state an image was drawn from in visual
  mode), finds exactly one true option on every item: 100 % on every family, mode and seed.
  It checks the item builder and the text templates, not the images (the oracle never looks
  at a pixel), so it is true by construction when the code is right: shown, never counted;
- `tolerance`, no shortcuts: each option-only baseline (`blind`, which scores options one by
  one as the card asks, and `blind_set`, which compares them with each other) is within
  chance ± 3 binomial standard deviations (of the pooled test items over seeds) on every
  family and mode, one value per family and mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import paired_check, sanity_check, tolerance_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats
from reprolab.studies.visual_queries.items import FAMILIES, MODES, N_OPTIONS

CLAIM_MODELS = ("tinyvlm", "tinyvlm_textheavy", "caption_reason", "hf_vlm")
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
    "hf_vlm": "HF VLM (local transformers model)",
}


def real_datasets(params: dict[str, Any]) -> list[str]:
    """The real datasets whose items the runs also answer (paper scale; none below)."""
    return list(params.get("real_items") or {})


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> dict:
    """{method: [metrics of each seed]} with a clear error when an accuracy is missing."""
    runs = {}
    prefixes = ["", *(f"{dataset}_" for dataset in real_datasets(params))]
    for method in params["methods"]:
        runs[method] = []
        for seed in seeds:
            path = Path(runs_dir) / method / f"seed{seed}" / "metrics.json"
            metrics = read_json(path)
            wanted = [f"{p}{f}_acc_{m}" for p in prefixes for f in FAMILIES for m in MODES]
            missing = wanted - metrics.keys()
            if missing:
                raise ValueError(f"{path}: run metrics lack {sorted(missing)}")
            runs[method].append(metrics)
    return runs


def per_seed(runs: dict, method: str, key: str) -> np.ndarray:
    """One metric of one method, one value per seed."""
    return np.asarray([run[key] for run in runs[method]], dtype=float)


def _column(dataset: str, family: str, what: str) -> str:
    """A table column: the sprite items' "TFR: text", a real dataset's "CLEVRER TFR: text"."""
    return f"{dataset.upper()} {family.upper()}: {what}" if dataset else f"{family.upper()}: {what}"


def columns(datasets: Sequence[str] = ()) -> list[str]:
    """Table columns in order: the sprite items', then each real dataset's (paper scale)."""
    return [
        _column(dataset, f, what)
        for dataset in ("", *datasets)
        for f in FAMILIES
        for what in ("text", "visual", "Δ")
    ]


def records(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[Record]:
    """Long-format records of the table. A real dataset's cell that the dataset does not pose
    or the method cannot answer (real_jobs) is NaN."""
    out = []
    for method in params["methods"]:
        for dataset in ("", *real_datasets(params)):
            prefix = f"{dataset}_" if dataset else ""
            for family in FAMILIES:
                text = per_seed(runs, method, f"{prefix}{family}_acc_text")
                visual = per_seed(runs, method, f"{prefix}{family}_acc_visual")
                for what, values in (("text", text), ("visual", visual), ("Δ", text - visual)):
                    column = _column(dataset, family, what)
                    out += [
                        Record(LABELS[method], column, s, v)
                        for s, v in zip(seeds, values, strict=True)
                    ]
    return out


def table(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> Table:
    """Rows = backends (by label); per family text, visual and Δ."""
    return Table(
        records(params, runs, seeds),
        [LABELS[m] for m in params["methods"]],
        columns(real_datasets(params)),
        "visual_queries: accuracy (%) with text and visual options per family, and the gap "
        "Δ = text − visual (mean ± std over seeds; chance 25 %)",
    )


def curve_rows(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> pd.DataFrame:
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
    points += [  # paper scale: `<dataset>/<family>/<method>`; NaN points are left out
        (
            f"{dataset}/{family}/{method}",
            x,
            float(per_seed(runs, method, f"{dataset}_{family}_acc_{mode}").mean()),
        )
        for dataset in real_datasets(params)
        for method in runs
        for family in FAMILIES
        for x, mode in enumerate(MODES)
    ]
    return curve_frame(points)


def claim_checks(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict]:
    """The checks of the module docstring."""
    alpha = float(params["claims"]["alpha"])
    min_effect = float(params["claims"]["min_effect"])
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
                    min_effect=min_effect,
                )
            )
    for dataset in real_datasets(params):  # paper scale: where both modes are answered
        for method in [m for m in CLAIM_MODELS if m in runs]:
            for family in FAMILIES:
                text = per_seed(runs, method, f"{dataset}_{family}_acc_text")
                visual = per_seed(runs, method, f"{dataset}_{family}_acc_visual")
                if not (np.isfinite(text).all() and np.isfinite(visual).all()):
                    continue  # not posed (SSv2: text only) or not answerable (real_jobs)
                checks.append(
                    paired_check(
                        f"{LABELS[method]} scores lower with visual options than with text "
                        f"options ({dataset.upper()} {family.upper()})",
                        f"{dataset.upper()} {family.upper()} accuracy (%)",
                        f"{method}:{dataset}:text",
                        f"{method}:{dataset}:visual",
                        text,
                        visual,
                        seeds,
                        alpha=alpha,
                        min_effect=min_effect,
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
            sanity_check(
                "the items are well posed: the oracle, reading the symbolic state behind each "
                "option (the parsed sentence in text mode, the state an image was drawn from in "
                "visual mode), finds exactly one true option on every item of every family and "
                "mode (this checks the item builder and the text templates, not the images)",
                "accuracy (%)",
                "every seed exactly 100 % (true by construction: the oracle reads the truth, "
                "never a pixel)",
                perfect,
                {"per_seed": values},
            )
        )
    for method in [m for m in BLIND if m in runs]:
        n = np.asarray([run["n_test"] for run in runs[method]], dtype=float).sum() / len(FAMILIES)
        sigma = 100.0 * np.sqrt(CHANCE / 100 * (1 - CHANCE / 100) / n)
        values = {
            f"{family}_{mode}": float(per_seed(runs, method, f"{family}_acc_{mode}").mean())
            for family in FAMILIES
            for mode in MODES
        }
        checks.append(
            tolerance_check(
                f"{LABELS[method]} is at chance on every family and mode (no shortcuts)",
                "accuracy (%), mean over seeds",
                values,
                CHANCE,
                float(3 * sigma),
                {
                    "sigma": float(sigma),
                    "pooled_items_per_family": float(n),
                    "tolerance": f"3σ, σ = {sigma:.2f} points (binomial, ~{n:.0f} pooled test "
                    "items per family)",
                },
            )
        )
    return checks


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
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
    "gives both modes the same items and the same trained model), Holm-corrected within the "
    "study; a claim holds when the mean of text − visual exceeds the minimum effect fixed in "
    "params (claims.min_effect, in accuracy points) and the adjusted p < alpha. The oracle row "
    "is a sanity check that the items are well posed (it reads symbolic states, never pixels; "
    "never counted); the option-only rows are tolerance checks (chance ± 3σ). The rules are "
    "fixed in params before the evaluation seeds are run."
)
