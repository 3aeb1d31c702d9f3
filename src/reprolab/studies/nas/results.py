"""The nas table, claim checks and study metrics, from the per-seed metrics files.

Table: one row per method; columns the single-edit scores (the first checkpoint: efficacy,
generalisation, specificity), the same at the end of the stream, the horizon (edits until
efficacy < 50 %), the long-run score (the final harmonic mean of efficacy, generalisation and
specificity), the target layer's final ‖W‖
relative to the unedited model's, the R² of linear and exponential fits of its growth, and the
generic-loss ratio (final / unedited). Mean ± std over edit-stream seeds.

Every rule and threshold is in `nas.claims`, fixed before the evaluation seeds were run (the
methods it names: `plain`, `nas`, `tight`, `rome`, `rome_nas`):
1. Norm growth under plain editing is exponential (`count`): on every seed the exponential fit
   of the plain editor's ‖W‖ against edits has a higher R² than the line.
2. NAS extends the usable horizon by `horizon_ratio`× (`bound`): per seed, NAS's horizon over
   the plain editor's is at least `horizon_ratio` (a censored NAS horizon, never below 50 %,
   counts at the stream's length: a lower bound).
3. NAS improves long-run editing (`paired`): NAS's long-run score is greater than the plain
   editor's by more than `min_effect` over seeds, one-sided paired t-test at `alpha`, Holm;
   the relative improvement is reported beside the paper's +72 %.
4. Without hurting single edits (`paired`, margin `single_edit_margin`): NAS's first-checkpoint
   efficacy is not below the plain editor's by more than the margin.
5. With negligible overhead (`bound`): per seed, NAS's counted operations for a batch of edits
   exceed the plain editor's by at most `overhead` (a share).
6. A tighter clamp does not do what NAS does (`paired`): NAS's long-run score is greater than
   the tight-clamp editor's.
7. NAS helps ROME too (`paired`): ROME+NAS's long-run score is greater than ROME's.
8-. Sanity checks (never counted): every NAS value vector has the anchor norm (relative error
   below 1e-4); the random-direction control applies updates of the plain solver's norms, so
   its ‖W‖ grows at least as fast as any update could push it (reported, not checked).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import bound_check, count_check, paired_check, sanity_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats
from reprolab.studies.nas.growth import composite

NOTES = __doc__.split("\n\n", 2)[2]
COLUMNS = {
    "single_efficacy": "efficacy (first batch)",
    "single_generalisation": "generalisation (first batch)",
    "single_specificity": "specificity (first batch)",
    "efficacy": "efficacy (end)",
    "generalisation": "generalisation (end)",
    "specificity": "specificity (end)",
    "horizon": "horizon (edits)",
    "long_run": "long-run score",
    "weight_ratio": "‖W‖/‖W₀‖ (end)",
    "r2_linear": "R² linear ‖W‖",
    "r2_exponential": "R² exponential ‖W‖",
    "generic_loss_ratio": "generic-loss ratio",
}
ANCHOR_TOLERANCE = 1e-4

Runs = list[dict[str, Any]]
"""The metrics.json of every seed, in seed order."""


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> Runs:
    """The metrics.json of every seed; a file that holds another seed's run is an error."""
    runs = []
    for seed in seeds:
        path = Path(runs_dir) / f"seed{seed}" / "metrics.json"
        run = read_json(path)
        if run["seed"] != seed:
            raise ValueError(f"{path}: holds the run of seed {run['seed']}")
        runs.append(run)
    return runs


def measure(run: dict[str, Any], method: str, name: str) -> float:
    """One table measure of one method in one seed's run."""
    record = run["methods"][method]
    first, last = record["checkpoints"][0], record["checkpoints"][-1]
    if name.startswith("single_"):
        return float(first[name.removeprefix("single_")])
    if name in ("efficacy", "generalisation", "specificity"):
        return float(last[name])
    if name in ("horizon", "long_run"):
        return float(record[name])
    if name == "weight_ratio":
        return record["batches"][-1]["weight_norm"][-1] / run["weight_unedited"][-1]
    if name in ("r2_linear", "r2_exponential"):
        growth = record["weight_growth"]
        return float(growth[name]) if growth else float("nan")
    if name == "generic_loss_ratio":
        return float(last["generic_loss"]) / float(run["generic_loss_unedited"])
    raise KeyError(name)


def values(runs: Runs, method: str, name: str) -> np.ndarray:
    """One value per seed of a method's measure."""
    return np.array([measure(r, method, name) for r in runs], dtype=float)


def table(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> Table:
    """The table of the module docstring."""
    out: list[Record] = []
    for method in params["methods"]:
        for name, column in COLUMNS.items():
            out += [
                Record(method, column, s, float(v))
                for s, v in zip(seeds, values(runs, method, name), strict=True)
            ]
    return Table(
        out,
        list(params["methods"]),
        list(COLUMNS.values()),
        "NAS: sequential editing of the fact LM by each method: scores after the first batch "
        "and at the end of the stream, the horizon (edits until efficacy < 50 %), the final "
        "composite, the growth of the target layer's ‖W‖ and the generic-loss ratio. "
        "Mean ± std over edit-stream seeds.",
        frozenset(),
    )


def growth_check(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> dict:
    """Claim 1."""
    plain = params["claims"]["plain"]
    fits = [r["methods"][plain]["weight_growth"] for r in runs]
    exponential = sum(bool(f and f["exponential"]) for f in fits)
    return count_check(
        "Norm growth is approximately exponential under plain sequential editing",
        f"seeds where an exponential fits {plain}'s ‖W‖ better than a line (R²)",
        {"exponential_seeds": exponential},
        {"exponential_seeds": ("at_least", len(seeds))},
        details={str(s): f for s, f in zip(seeds, fits, strict=True)},
    )


def horizon_check(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> dict:
    """Claim 2."""
    claims = params["claims"]
    plain, nas = claims["plain"], claims["nas"]
    ratios = {
        str(s): measure(r, nas, "horizon") / measure(r, plain, "horizon")
        for s, r in zip(seeds, runs, strict=True)
    }
    censored = {
        str(s): bool(r["methods"][nas]["horizon_censored"])
        for s, r in zip(seeds, runs, strict=True)
    }
    return bound_check(
        f"NAS extends the usable editing horizon by more than {claims['horizon_ratio']:g}×",
        f"{nas}'s horizon / {plain}'s (edits until efficacy < 50 %)",
        ratios,
        "at_least",
        float(claims["horizon_ratio"]),
        details={"nas_censored": censored},
    )


def long_run_check(
    params: dict[str, Any], runs: Runs, seeds: Sequence[int], method: str, baseline: str, text: str
) -> dict:
    """A paired check that `method`'s long-run score beats `baseline`'s, with the relative
    improvement of the seed means in its details."""
    ours, theirs = values(runs, method, "long_run"), values(runs, baseline, "long_run")
    claims = params["claims"]
    check = paired_check(
        text,
        "long-run score",
        method,
        baseline,
        ours,
        theirs,
        seeds,
        alpha=float(claims["alpha"]),
        min_effect=float(claims["min_effect"]),
    )
    improvement = float(ours.mean() / theirs.mean() - 1.0) if theirs.mean() > 0 else float("nan")
    check["details"] = {"relative_improvement": improvement}
    return check


def single_edit_check(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> dict:
    """Claim 4."""
    claims = params["claims"]
    plain, nas = claims["plain"], claims["nas"]
    return paired_check(
        "NAS does not hurt single-edit efficacy",
        "efficacy after the first batch",
        nas,
        plain,
        values(runs, nas, "single_efficacy"),
        values(runs, plain, "single_efficacy"),
        seeds,
        alpha=float(claims["alpha"]),
        margin=float(claims["single_edit_margin"]),
    )


def overhead_check(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> dict:
    """Claim 5."""
    claims = params["claims"]
    plain, nas = claims["plain"], claims["nas"]
    shares = {
        str(s): r["operations"][nas] / r["operations"][plain] - 1.0
        for s, r in zip(seeds, runs, strict=True)
    }
    return bound_check(
        "NAS's computational overhead is negligible",
        f"extra counted operations of a batch of edits, {nas} over {plain} (a share)",
        shares,
        "at_most",
        float(claims["overhead"]),
    )


def anchor_sanity(params: dict[str, Any], runs: Runs) -> list[dict]:
    """Every NAS method's wanted value vectors have the anchor norm."""
    checks = []
    for name, spec in params["methods"].items():
        if not spec.get("anchor"):
            continue
        worst = 0.0
        for run in runs:
            anchor = run["anchors"][spec["anchor"]]
            for batch in run["methods"][name]["batches"]:
                worst = max(worst, *(abs(w / anchor - 1.0) for w in batch["wanted"]))
        checks.append(
            sanity_check(
                f"{name} rescales every value vector to its anchor",
                "largest relative error of ‖v*_NAS‖ against the anchor",
                f"every relative error < {ANCHOR_TOLERANCE:g}",
                worst < ANCHOR_TOLERANCE,
                details={"largest_error": worst},
            )
        )
    return checks


def claim_checks(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> list[dict]:
    """The module docstring's claims, in order."""
    claims = params["claims"]
    return [
        growth_check(params, runs, seeds),
        horizon_check(params, runs, seeds),
        long_run_check(
            params,
            runs,
            seeds,
            claims["nas"],
            claims["plain"],
            "NAS improves long-run editing performance (paper: +72 %)",
        ),
        single_edit_check(params, runs, seeds),
        overhead_check(params, runs, seeds),
        long_run_check(
            params,
            runs,
            seeds,
            claims["nas"],
            claims["tight"],
            "A tighter clamp on the increment does not do what NAS does",
        ),
        long_run_check(
            params,
            runs,
            seeds,
            claims["rome_nas"],
            claims["rome"],
            "NAS improves long-run editing with ROME as well",
        ),
        *anchor_sanity(params, runs),
    ]


def study_metrics(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> dict[str, Any]:
    """Seed statistics of every table measure, the anchors, the operation counts and the
    growth fits of ‖W‖ and ‖v*‖ per method."""
    return {
        "seeds": list(seeds),
        "edits": runs[0]["edits"],
        "tuned": runs[0]["tuned"],
        "anchors": {k: seed_stats([r["anchors"][k] for r in runs]) for k in runs[0]["anchors"]},
        "methods": {
            method: {
                **{name: seed_stats(values(runs, method, name)) for name in COLUMNS},
                "operations": seed_stats([r["operations"][method] for r in runs]),
                "weight_growth": [r["methods"][method]["weight_growth"] for r in runs],
                "vstar_growth": [r["methods"][method]["vstar_growth"] for r in runs],
            }
            for method in params["methods"]
        },
    }


def mean_series(
    runs: Runs, method: str, kind: str, pick: Callable[[dict[str, Any]], float]
) -> list[tuple[float, float]]:
    """(edits, seed mean of `pick`) over a method's checkpoints or batches (`kind`)."""
    rows = [r["methods"][method][kind] for r in runs]
    return [
        (float(entry["edits"]), float(np.mean([pick(row[index]) for row in rows])))
        for index, entry in enumerate(rows[0])
    ]


SERIES: dict[str, tuple[str, Callable[[dict[str, Any]], float]]] = {
    "efficacy": ("checkpoints", lambda c: c["efficacy"]),
    "specificity": ("checkpoints", lambda c: c["specificity"]),
    "composite": ("checkpoints", composite),
    "weight_norm": ("batches", lambda b: b["weight_norm"][-1]),
    "vstar_norm": ("batches", lambda b: float(np.mean(b["vstar"]))),
    "delta_norm": ("batches", lambda b: float(np.mean(b["delta"]))),
}
"""The curves of each method: where each is read and how."""


def curve_rows(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> pd.DataFrame:
    """Per method and SERIES entry (series `<method>/<name>`), seed means against edits."""
    points = [
        (f"{method}/{name}", x, y)
        for method in params["methods"]
        for name, (kind, pick) in SERIES.items()
        for x, y in mean_series(runs, method, kind, pick)
    ]
    return curve_frame(points)
