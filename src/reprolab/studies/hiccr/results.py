"""The hiccr table, claim checks and study metrics, from the warm start's record and the runs.

Table: rows = the warm start every run begins from, then the methods; columns = greedy accuracy
on the test items, the three grounding measures (image attention at the reading tokens, the
image share of the reading tokens' input gradient, functional dependence on the image: test
accuracy minus accuracy with each item's image swapped for another's) and the extra counted
operations of a method's update over its base algorithm's (% of the base's). The warm start has
one value, repeated for every seed (std 0).

Every rule and threshold is in `hiccr.claims`, fixed before the evaluation seeds were run;
paired checks are one-sided paired t-tests over the seeds, Holm-adjusted within the study:
1. Random per-token scaling beats uniform credit: accuracy, random − GRPO > `min_effect`.
2. Uniform credit weakens visual grounding: for each of the three measures, GRPO's value after
   RL is below the warm start's (three checks; the warm start's value is the same on every
   seed, so each is a one-sample test of the seeds' drops).
3. HiCCR improves on its base algorithm: accuracy, HiCCR − GRPO > `min_effect`, and, when both
   are listed, Dr. GRPO + HiCCR − Dr. GRPO > `min_effect` ("applies to mainstream RLVR
   algorithms").
4. HiCCR alleviates the grounding loss: functional dependence, HiCCR − GRPO > 0 (the measure
   that says whether answers use the image; attention and gradient share are in the table).
5. HiCCR's overhead is small (`bound`): on every seed its update's counted operations exceed
   its base's by at most `max_overhead` (the abstract: under 3 % of wall-clock; counted
   operations, since timings cannot be byte-identical; `make benchmark` measures the time).
6. Sanity (never counted): with zero weight strengths every weighted row's loss and gradients
   equal its base's exactly on a real batch, and the warm start passed its gates.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import bound_check, paired_check, sanity_check
from reprolab.core.io import read_h5, read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats
from reprolab.studies.hiccr.rows import BASELINE_OF, ROWS

NOTES = __doc__.split("\n\n", 2)[2]
WARM_START = "warm_start"
NAMES = {
    WARM_START: "warm start (SFT, before RL)",
    "grpo": "GRPO (uniform credit)",
    "random": "GRPO + random token scaling",
    "token": "GRPO + token weights",
    "trajectory": "GRPO + trajectory weights",
    "hiccr": "HiCCR (GRPO + both)",
    "drgrpo": "Dr. GRPO",
    "drgrpo_hiccr": "Dr. GRPO + HiCCR",
}
MEASURES = {
    "accuracy": "accuracy",
    "attention": "image attention (reading tokens)",
    "gradient_share": "image share of the input gradient",
    "dependence": "dependence on the image",
}
OVERHEAD = "extra update operations (%)"
CURVE_MEASURES = ("accuracy", "attention", "gradient_share", "dependence")


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> dict[str, Any]:
    """Per method every seed's metrics and curves, and the warm start's record (which every run
    carries; they must agree)."""
    runs_dir = Path(runs_dir)
    metrics = {
        method: [read_json(runs_dir / method / f"seed{s}" / "metrics.json") for s in seeds]
        for method in params["methods"]
    }
    records = [m["warm_start"] for runs in metrics.values() for m in runs]
    if any(record != records[0] for record in records):
        raise ValueError(f"{runs_dir}: the runs started from different warm starts")
    return {
        "sft": records[0],
        "metrics": metrics,
        "curves": {
            method: [read_h5(runs_dir / method / f"seed{s}" / "curves.h5") for s in seeds]
            for method in params["methods"]
        },
    }


def values(runs: dict[str, Any], row: str, key: str, seeds: Sequence[int]) -> np.ndarray:
    """One value of measure `key` per seed (the warm start's repeated), or of the overhead."""
    if row == WARM_START:
        return np.full(len(seeds), float(runs["sft"]["test"][key]))
    if key == "overhead":
        ratios = [m["first_batch"]["operations_ratio"] for m in runs["metrics"][row]]
        return 100.0 * (np.array(ratios, dtype=float) - 1.0)
    return np.array([m["test"][key] for m in runs["metrics"][row]], dtype=float)


def table(params: dict[str, Any], runs: dict[str, Any], seeds: Sequence[int]) -> Table:
    """Rows: the warm start, then `methods`; columns: MEASURES and OVERHEAD."""
    rows = [WARM_START, *params["methods"]]
    out = []
    for row in rows:
        for key, column in MEASURES.items():
            out += [
                Record(NAMES[row], column, s, float(v))
                for s, v in zip(seeds, values(runs, row, key, seeds), strict=True)
            ]
        if row != WARM_START:
            overhead = values(runs, row, "overhead", seeds)
            out += [
                Record(NAMES[row], OVERHEAD, s, float(v))
                for s, v in zip(seeds, overhead, strict=True)
            ]
    return Table(
        out,
        [NAMES[r] for r in rows],
        [*MEASURES.values(), OVERHEAD],
        "Credit assignment in RLVR on VisArith: test accuracy and visual grounding after RL "
        "from one warm start, and each update's extra counted operations over its base "
        "algorithm's, mean ± std over seeds.",
        frozenset({(NAMES[WARM_START], OVERHEAD)}),
    )


def _paired(
    statement: str,
    key: str,
    method: str,
    baseline: str,
    runs: dict,
    seeds: Sequence[int],
    **rule: Any,
) -> dict[str, Any]:
    return paired_check(
        statement,
        MEASURES[key],
        method,
        baseline,
        values(runs, method, key, seeds),
        values(runs, baseline, key, seeds),
        seeds,
        **rule,
    )


def claim_checks(params: dict[str, Any], runs: dict[str, Any], seeds: Sequence[int]) -> list[dict]:
    """Claims 1-5 of the module docstring, then the sanity checks (6)."""
    rules = params["claims"]
    alpha, min_effect = float(rules["alpha"]), float(rules["min_effect"])
    methods = params["methods"]
    checks = []
    if "random" in methods:
        checks.append(
            _paired(
                "Even random per-token advantage scaling beats GRPO's uniform credit.",
                "accuracy",
                "random",
                "grpo",
                runs,
                seeds,
                alpha=alpha,
                min_effect=min_effect,
            )
        )
    for key in ("attention", "gradient_share", "dependence"):
        checks.append(
            _paired(
                f"RLVR with uniform credit weakens visual grounding ({MEASURES[key]} falls "
                "from the warm start under GRPO).",
                key,
                "grpo",
                WARM_START,
                runs,
                seeds,
                direction="less",
                alpha=alpha,
            )
        )
    for method, base in BASELINE_OF.items():
        if method in methods and base in methods:
            checks.append(
                _paired(
                    f"HiCCR improves on its base algorithm ({NAMES[method]} over {NAMES[base]}).",
                    "accuracy",
                    method,
                    base,
                    runs,
                    seeds,
                    alpha=alpha,
                    min_effect=min_effect,
                )
            )
    checks.append(
        _paired(
            "HiCCR alleviates the loss of visual grounding (more dependence on the image than "
            "GRPO after RL).",
            "dependence",
            "hiccr",
            "grpo",
            runs,
            seeds,
            alpha=alpha,
        )
    )
    overheads = {
        f"{method} seed {seed}": float(v) / 100.0
        for method in BASELINE_OF
        if method in methods
        for seed, v in zip(seeds, values(runs, method, "overhead", seeds), strict=True)
    }
    checks.append(
        bound_check(
            "HiCCR adds little to its base algorithm's cost (the abstract: < 3 % wall-clock).",
            "extra counted operations of an update over the base algorithm's (fraction)",
            overheads,
            "at_most",
            float(rules["max_overhead"]),
        )
    )
    return [*checks, *sanity_checks(params, runs)]


def sanity_checks(params: dict[str, Any], runs: dict[str, Any]) -> list[dict]:
    """Weighted rows reduce to their base with zero strengths; the warm start's gates held."""
    off = [
        f"{method} seed {m['seed']}"
        for method in params["methods"]
        if ROWS[method].token != "uniform" or ROWS[method].trajectory
        for m in runs["metrics"][method]
        if not m["first_batch"]["reduces_to_base"]
    ]
    gate = runs["sft"]["gate"]
    low, high = params["sft"]["gate"]["accuracy"]
    held = (
        low <= gate["accuracy"] <= high
        and gate["dependence"] >= params["sft"]["gate"]["min_dependence"]
    )
    return [
        sanity_check(
            "With constant credit weights HiCCR is its base algorithm.",
            "loss and gradients with zero weight strengths against the base's, one batch",
            "exactly equal for every weighted row and seed",
            not off,
            {"differing": off} if off else None,
        ),
        sanity_check(
            "RL starts from a warm start that reads the image and has room to gain.",
            "the warm start's gate accuracy and dependence",
            f"accuracy in [{low}, {high}], dependence ≥ {params['sft']['gate']['min_dependence']}",
            held,
        ),
    ]


def study_metrics(
    params: dict[str, Any], runs: dict[str, Any], seeds: Sequence[int]
) -> dict[str, Any]:
    """Per row each column's seed statistics, the warm start's record (gates, curve), each
    method's tuned learning rate and mean training reward, and the overhead counts."""
    rows: dict[str, Any] = {}
    for row in [WARM_START, *params["methods"]]:
        rows[row] = {key: seed_stats(values(runs, row, key, seeds)) for key in MEASURES}
        if row != WARM_START:
            metrics = runs["metrics"][row]
            rows[row]["overhead_percent"] = seed_stats(values(runs, row, "overhead", seeds))
            rows[row]["mean_reward"] = seed_stats([m["mean_reward"] for m in metrics])
            rows[row]["lr"] = metrics[0]["lr"]
            rows[row]["operations"] = metrics[0]["first_batch"]["operations"]
    sft = runs["sft"]
    return {
        "seeds": list(seeds),
        "rows": rows,
        "warm_start": {k: sft[k] for k in ("steps", "corrupted_digits", "gate", "test")},
    }


def curve_rows(params: dict[str, Any], runs: dict[str, Any], seeds: Sequence[int]) -> pd.DataFrame:
    """Seed means of each measure on the curve items against the RL step (x), series
    `<method>_<measure>`."""
    points = []
    for method in params["methods"]:
        curves = runs["curves"][method]
        steps = curves[0]["step"]
        for measure in CURVE_MEASURES:
            means = np.mean([c[measure] for c in curves], axis=0)
            points += [
                (f"{method}_{measure}", float(x), float(y))
                for x, y in zip(steps, means, strict=True)
            ]
    return curve_frame(points)
