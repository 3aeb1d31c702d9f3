"""The overcorrection table, claim checks, metrics and curves, from the per-seed metrics files.

A run file holds, per reader (the trained model answering), channel (how the chosen items reach
it: `icl`, `rag`, `memory`), selector and k, the error of the answer (MSE per answer coordinate
against the truth), the over- and under-correction rates (overshoot κ above / below the card's
thresholds) and the R² of the theory's predicted correction against the measured one; per
reader and channel also the R² pooled over every selector but `none` and every k.

Table: rows ``reader/channel/selector``, columns per k: MSE, over-correction rate,
under-correction rate, R²; mean ± std over seeds (R² does not apply to `none`, whose
correction is zero).

Claims, per reader and channel, in the abstract's order:

1. over-correction grows with k under similarity selection: the `claims.growth_selector`'s
   over-correction rate at the largest k exceeds its rate at the smallest k (paired over seeds,
   effect above `claims.min_rate_growth`);
2. the theory predicts the measured correction: every seed's pooled R² is at least
   `claims.r2_floor` (a bound; `icl` and `rag` only: the memory read *is* the theory's form, so
   its R² of 1 is a sanity check);
3. theory-guided selection lowers the error: `claims.theory`'s MSE, averaged over the ks, is
   below the strongest of `claims.baselines` (the one of lowest mean over seeds), paired over
   seeds with effect above `claims.min_effect`.
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
from reprolab.studies.overcorrection.workflow_io import trained_readers

MEASURES = {"mse": "MSE", "over": "over", "under": "under", "r2": "R²"}
"""Run-file key → the column's name (followed by ``k=<k>``)."""
MEMORY_EXACT = 1 - 1e-9
"""The memory read's R² that counts as exact (sanity check)."""
NOTES = (
    "Paired checks: one-sided paired t-tests over the seeds (a seed fixes the prior, the "
    "reader's training, the shifted world and the query pools for every selector), "
    "Holm-corrected within the study; the strongest baseline is the one of lowest mean error "
    "over seeds. The R² floor is a bound every seed must meet. Rules fixed in params.yaml "
    "before the evaluation seeds ran."
)


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> list[dict]:
    """metrics.json of every seed, in seed order."""
    return [read_json(Path(runs_dir) / f"seed{seed}" / "metrics.json") for seed in seeds]


def cell(run: dict, reader: str, channel: str, selector: str, k: int) -> dict[str, float]:
    """One seed's measures of one (reader, channel, selector, k)."""
    return run["readers"][reader]["channels"][channel]["selectors"][selector][str(k)]


def per_seed(
    runs: list[dict], reader: str, channel: str, selector: str, k: int, measure: str
) -> np.ndarray:
    """`measure` of one (reader, channel, selector, k), one value per seed."""
    return np.asarray(
        [cell(run, reader, channel, selector, k)[measure] for run in runs], dtype=float
    )


def mean_over_ks(
    params: dict[str, Any], runs: list[dict], reader: str, channel: str, selector: str
) -> np.ndarray:
    """MSE averaged over the ks, one value per seed."""
    return np.mean([per_seed(runs, reader, channel, selector, k, "mse") for k in params["ks"]], 0)


def settings(params: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (reader, channel), in table order."""
    return [(reader, channel) for reader in params["readers"] for channel in params["channels"]]


def row(reader: str, channel: str, selector: str) -> str:
    """The table row of a (reader, channel, selector)."""
    return f"{reader}/{channel}/{selector}"


def column(measure: str, k: int) -> str:
    """The table column of a measure at k."""
    return f"{MEASURES[measure]} k={k}"


def table(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> Table:
    """Rows reader/channel/selector; columns per k: MSE, over, under, R² (module docstring)."""
    records, rows, not_applicable = [], [], set()
    columns = [column(measure, k) for k in params["ks"] for measure in MEASURES]
    for reader, channel in settings(params):
        for selector in params["selectors"]:
            name = row(reader, channel, selector)
            rows.append(name)
            for k in params["ks"]:
                for measure in MEASURES:
                    if selector == "none" and measure == "r2":
                        not_applicable.add((name, column(measure, k)))
                        continue
                    values = per_seed(runs, reader, channel, selector, k, measure)
                    records += [
                        Record(name, column(measure, k), seed, value)
                        for seed, value in zip(seeds, values, strict=True)
                    ]
    caption = (
        "overcorrection: error (MSE per answer coordinate), over- and under-correction rates "
        "and the R² of the theory's predicted correction, per reader, channel, selector and "
        "number of items k; mean ± std over seeds."
    )
    return Table(records, rows, columns, caption, frozenset(not_applicable))


def strongest(
    params: dict[str, Any], runs: list[dict], reader: str, channel: str
) -> tuple[str, np.ndarray]:
    """The baseline of lowest mean (over seeds) k-averaged MSE, and its per-seed values."""
    scored = {
        name: mean_over_ks(params, runs, reader, channel, name)
        for name in params["claims"]["baselines"]
    }
    best = min(scored, key=lambda name: float(scored[name].mean()))
    return best, scored[best]


def growth_check(
    params: dict[str, Any], runs: list[dict], seeds: Sequence[int], reader: str, channel: str
) -> dict:
    """Claim 1: the growth selector's over-correction rate rises from the smallest to the
    largest k."""
    claims, ks = params["claims"], params["ks"]
    selector, low, high = claims["growth_selector"], min(ks), max(ks)
    return paired_check(
        f"{reader} reader, {channel}: {selector} over-corrects more at k = {high} than at "
        f"k = {low}",
        "over-correction rate",
        f"{selector}@k={high}",
        f"{selector}@k={low}",
        per_seed(runs, reader, channel, selector, high, "over"),
        per_seed(runs, reader, channel, selector, low, "over"),
        seeds,
        direction="greater",
        alpha=claims["alpha"],
        min_effect=claims["min_rate_growth"],
    )


def prediction_check(
    params: dict[str, Any], runs: list[dict], seeds: Sequence[int], reader: str, channel: str
) -> dict:
    """Claim 2: the theory's predicted correction explains the measured one (pooled R²)."""
    floor = params["claims"]["r2_floor"]
    values = {
        f"seed {seed}": run["readers"][reader]["channels"][channel]["r2_pooled"]
        for seed, run in zip(seeds, runs, strict=True)
    }
    return bound_check(
        f"{reader} reader, {channel}: the theory predicts the measured correction "
        f"(pooled R² ≥ {floor:g})",
        "R² of predicted against measured correction",
        values,
        "at_least",
        floor,
    )


def memory_check(runs: list[dict], seeds: Sequence[int], reader: str) -> dict:
    """Sanity: the memory read is the theory's linear form, so the theory predicts it exactly."""
    values = [run["readers"][reader]["channels"]["memory"]["r2_pooled"] for run in runs]
    return sanity_check(
        f"{reader} reader, memory: the read is the theory's form (R² = 1 on every seed)",
        "R² of predicted against measured correction",
        f"every seed's pooled R² ≥ {MEMORY_EXACT}",
        bool(all(value >= MEMORY_EXACT for value in values)),
        {"values": {f"seed {s}": v for s, v in zip(seeds, values, strict=True)}},
    )


def selection_check(
    params: dict[str, Any], runs: list[dict], seeds: Sequence[int], reader: str, channel: str
) -> dict:
    """Claim 3: theory-guided selection has a lower k-averaged MSE than the strongest
    baseline."""
    claims = params["claims"]
    rival, rival_values = strongest(params, runs, reader, channel)
    return paired_check(
        f"{reader} reader, {channel}: {claims['theory']} selection has a lower error than "
        f"{rival} (the strongest label-free baseline), averaged over k",
        "MSE averaged over k",
        claims["theory"],
        rival,
        mean_over_ks(params, runs, reader, channel, claims["theory"]),
        rival_values,
        seeds,
        direction="less",
        alpha=claims["alpha"],
        min_effect=claims["min_effect"],
    )


def claim_checks(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> list[dict]:
    """The three claims per reader and channel, and the memory sanity checks."""
    checks = [growth_check(params, runs, seeds, r, c) for r, c in settings(params)]
    checks += [
        prediction_check(params, runs, seeds, r, c) for r, c in settings(params) if c != "memory"
    ]
    checks += [selection_check(params, runs, seeds, r, c) for r, c in settings(params)]
    if "memory" in params["channels"]:
        checks += [memory_check(runs, seeds, reader) for reader in params["readers"]]
    return checks


def study_metrics(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> dict:
    """Seed statistics of every cell, of the pooled R², and of each reader's calibration and
    training (a trained reader's: a pretrained one has none)."""
    out: dict[str, Any] = {"seeds": list(seeds), "readers": {}}
    for reader in params["readers"]:
        entry: dict[str, Any] = {
            "calibration_r2": seed_stats(
                [run["readers"][reader]["calibration"]["r2"] for run in runs]
            ),
            "channels": {},
        }
        if reader in trained_readers(params):
            entry["final_loss"] = seed_stats(
                [run["readers"][reader]["training"]["final_loss"] for run in runs]
            )
        for channel in params["channels"]:
            entry["channels"][channel] = {
                "r2_pooled": seed_stats(
                    [run["readers"][reader]["channels"][channel]["r2_pooled"] for run in runs]
                ),
                "selectors": {
                    selector: {
                        str(k): {
                            measure: seed_stats(
                                per_seed(runs, reader, channel, selector, k, measure)
                            )
                            for measure in MEASURES
                        }
                        for k in params["ks"]
                    }
                    for selector in params["selectors"]
                },
            }
        out["readers"][reader] = entry
    return out


def curve_rows(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: along k, the MSE and over-correction rate of every reader/channel/selector
    (``<reader>/<channel>/<selector>/<measure>``), means over seeds."""
    return curve_frame(
        (
            f"{row(reader, channel, selector)}/{measure}",
            float(k),
            float(np.mean(per_seed(runs, reader, channel, selector, k, measure))),
        )
        for reader, channel in settings(params)
        for selector in params["selectors"]
        for measure in ("mse", "over")
        for k in params["ks"]
    )
