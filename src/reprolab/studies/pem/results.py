"""The pem table, claim checks and study metrics, from the per-job metrics files.

Table: rows = methods; one column per sweep condition (source setting × SNR), SINR in dB,
mean ± std over seeds.

Claims (paired over seeds, one-sided paired t-test, Holm-adjusted p < alpha; core.claims), for
every noise level of the sweep:
1. PEM beats NSM (the biologically plausible method that assumes uncorrelated sources) at every
   box correlation ρ > 0 ("outperforms biologically plausible algorithms that rely on stronger
   independence or decorrelation assumptions ... under increasing source correlation");
2. PEM beats FastICA at the largest ρ (robust where independence fails);
3. PEM is competitive with the exact det-max reference at the largest ρ: PEM > det-max − margin;
4. PEM is competitive with CorInfoMax at the largest ρ: PEM > CorInfoMax − margin.
5. A sanity check (an analytic inequality, never counted): the spectral bounds
   lower ≤ δ ≤ upper of `metrics.surrogate_bound` hold on every PEM, PEM-batch and det-max run;
   metrics.json keeps, per condition, δ, both bounds, their ratio (tightness) and
   x_max = λ_max(C_e)/ε_e, which say where the bound is tight.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import paired_check, sanity_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats

BOUND_METHODS = ("pem", "pem_batch", "detmax")
BOUND_KEYS = ("delta", "lower", "upper", "tightness", "x_max")


def snr_key(snr_db: float) -> str:
    """The folder name of a noise level: snr30, snr15, snr7.5."""
    return f"snr{float(snr_db):g}"


def condition(source: str, snr_db: float) -> str:
    """The table column of one sweep condition."""
    return f"{source} @ {float(snr_db):g} dB: SINR (dB)"


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> dict:
    """{snr_db: [metrics of seed 0, seed 1, ...]} read from runs_dir."""
    root = Path(runs_dir)
    return {
        float(snr): [read_json(root / snr_key(snr) / f"seed{s}" / "metrics.json") for s in seeds]
        for snr in params["noise_db"]
    }


def per_seed(runs: dict, snr: float, source: str, method: str, key: str = "sinr") -> np.ndarray:
    """One value per seed: `key` of `method` on `source` at noise level `snr`."""
    values = []
    for run in runs[snr]:
        entry = run["sources"][source][method]
        values.append(entry[key] if key == "sinr" else entry["bound"][key])
    return np.asarray(values, dtype=float)


def records(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[Record]:
    """Long-format table records: SINR per condition, method and seed."""
    out = []
    for snr in runs:
        for source in params["sources"]:
            for method in params["methods"]:
                values = per_seed(runs, snr, source, method)
                out += [
                    Record(method, condition(source, snr), s, v)
                    for s, v in zip(seeds, values, strict=True)
                ]
    return out


def box_correlations(params: dict[str, Any]) -> dict[str, float]:
    """{source name: ρ} of the box sources, in the order of params."""
    return {n: float(s["rho"]) for n, s in params["sources"].items() if s["domain"] == "box"}


def table(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> Table:
    """Rows = methods, one SINR column per (noise level, source setting)."""
    return Table(
        records(params, runs, seeds),
        list(params["methods"]),
        [condition(s, snr) for snr in runs for s in params["sources"]],
        "PEM against NSM, CorInfoMax, batch det-max and FastICA: SINR (dB), mean ± std over seeds.",
    )


def claim_checks(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict]:
    """Claims 1-4 of the module docstring for every noise level, then the bound sanity check."""
    return paired_claims(params, runs, seeds) + [bound_check(params, runs)]


def paired_claims(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict]:
    """The paired claims 1-4 of the module docstring, for every noise level."""
    alpha, margin = params["claims"]["alpha"], float(params["claims"]["margin_db"])
    rhos = box_correlations(params)
    checks = []
    if not rhos:
        return checks
    top = max(rhos, key=rhos.get)
    for snr in runs:
        pem = {s: per_seed(runs, snr, s, "pem") for s in rhos}
        specs = [
            (f"PEM beats NSM on SINR (ρ = {rho:g}, {snr:g} dB)", source, "nsm", 0.0)
            for source, rho in rhos.items()
            if rho > 0
        ]
        specs += [
            (f"PEM beats FastICA on SINR (ρ = {rhos[top]:g}, {snr:g} dB)", top, "fastica", 0.0),
            (
                f"PEM is within {margin:g} dB of batch det-max (ρ = {rhos[top]:g}, {snr:g} dB)",
                top,
                "detmax",
                margin,
            ),
            (
                f"PEM is within {margin:g} dB of CorInfoMax (ρ = {rhos[top]:g}, {snr:g} dB)",
                top,
                "corinfomax",
                margin,
            ),
        ]
        for statement, source, baseline, slack in specs:
            if baseline not in params["methods"]:
                continue
            checks.append(
                paired_check(
                    statement,
                    condition(source, snr),
                    "pem",
                    baseline,
                    pem[source],
                    per_seed(runs, snr, source, baseline),
                    seeds,
                    alpha=alpha,
                    margin=slack,
                )
            )
    return checks


def bound_summary(runs: dict, params: dict[str, Any]) -> dict[str, Any]:
    """Per noise level, source and PEM-family method: seed stats of δ, its bounds, x_max."""
    out: dict[str, Any] = {}
    for snr in runs:
        for source in params["sources"]:
            for method in (m for m in BOUND_METHODS if m in params["methods"]):
                out.setdefault(snr_key(snr), {}).setdefault(source, {})[method] = {
                    key: seed_stats(per_seed(runs, snr, source, method, key)) for key in BOUND_KEYS
                }
    return out


def bound_check(params: dict[str, Any], runs: dict) -> dict[str, Any]:
    """Claim 5: lower ≤ δ ≤ upper on every run, with where the bound is tightest / loosest."""
    rows = []
    for snr in runs:
        for source in params["sources"]:
            for method in (m for m in BOUND_METHODS if m in params["methods"]):
                for run in runs[snr]:
                    bound = run["sources"][source][method]["bound"]
                    rows.append((snr, source, method, run["seed"], bound))
    rel = 1e-9
    violations = [
        f"{source} @ {snr:g} dB, {method}, seed {seed}"
        for snr, source, method, seed, b in rows
        if not b["lower"] * (1 - rel) <= b["delta"] <= b["upper"] * (1 + rel)
    ]
    ratios = np.array([b["tightness"] for *_, b in rows])
    x_max = np.array([b["x_max"] for *_, b in rows])
    return sanity_check(
        "The spectral bounds on the surrogate error hold on every PEM-family run",
        "surrogate error δ",
        "¼Σx²/(1+x) ≤ δ ≤ ¼Σx², x = eig(C_e)·β, on every run (an analytic inequality)",
        not violations,
        {
            "runs": len(rows),
            "violations": violations,
            "tightness_min": float(ratios.min()),
            "tightness_max": float(ratios.max()),
            "x_max_at_tightest": float(x_max[ratios.argmin()]),
            "x_max_at_loosest": float(x_max[ratios.argmax()]),
        },
    )


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: SINR seed stats per condition and method, the bound summary and curves."""
    sinr: dict[str, Any] = {}
    for snr in runs:
        for source in params["sources"]:
            for method in params["methods"]:
                values = per_seed(runs, snr, source, method)
                sinr.setdefault(snr_key(snr), {}).setdefault(source, {})[method] = seed_stats(
                    values
                )
    return {"seeds": list(seeds), "sinr": sinr, "surrogate_bound": bound_summary(runs, params)}


def curve_rows(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: online PEM's SINR (dB) against training samples seen, seed mean.

    Online PEM is the one method whose runs record a curve (its SINR after every epoch), and
    it is the paper's method: how fast its local rules separate the sources, per condition,
    is what a change to them moves first; the last point is the table's cell. One series per
    condition, `<source>/snr<dB>/pem`; x = samples seen (epochs done × `data.n_samples`: each
    epoch passes every sample once), y = SINR (dB). Rows are `x,series,y`, sorted by
    (series, x); `runs` is `load_runs`'s {snr: [metrics of each seed]}.
    """
    n_samples = int(params["data"]["n_samples"])
    points = []
    for snr, seed_runs in runs.items():
        for source in params["sources"]:
            sinr = np.mean(
                [run["sources"][source]["pem"]["curves"]["sinr"] for run in seed_runs], axis=0
            )
            points += [
                (f"{source}/{snr_key(snr)}/pem", (epoch + 1) * n_samples, float(y))
                for epoch, y in enumerate(sinr)
            ]
    return curve_frame(points)


NOTES = (
    "Claims 1-4 are one-sided paired t-tests over the seeds listed (same seed = same sources, "
    "mixing and noise for every method), Holm-corrected within the study; a claim holds when "
    "the mean difference points the claimed way and the adjusted p < alpha. 'Within m dB' "
    "tests PEM against the reference with a margin of m dB. The last entry is a sanity check "
    "of the spectral bound on every run, not counted. The rules and the margin were fixed "
    "before any result was seen."
)
