"""The proofrank table, claim checks and study metrics, from the per-seed metrics files.

Table, two blocks: (1) discriminant validity: rows are the perturbations of the corpus's correct
proofs, columns the mean change of each proxy (correctness is unchanged by construction, "—");
(2) the harness: rows are the backends, columns correctness, the five proxies and the ProofRank
score. Mean ± std over the evaluation seeds (perturbation draws; backend samples).

Every rule and threshold is in `proofrank.claims`, fixed before the evaluation seeds were run:
1-5. The diagonal dominates (`paired`, one per proxy): each proxy falls more under its own
   perturbation (perturb.EXPECTED) than under the other perturbation that lowers it most,
   per seed the mean over correct proofs; one-sided paired t-tests over seeds, Holm.
6. Adaptivity recovers the injected non-compliance rate (`tolerance`): the rate read back as
   1 − adaptivity(non-compliant backend) / adaptivity(its compliant twin), adaptivities pooled
   over seeds (one instructed request per theorem and seed: a seed alone holds too few
   draws), lies within `claims.rate_tolerance` of the rate injected.
7. The proxies see what correctness does not (`count`): among pairs of backends whose mean
   correctness is positive and differs by at most `claims.equal_correctness` (pairs where one
   backend is built from the other, `claims.derived`, left out: they differ by construction), at
   least one pair differs on some proxy by at least `claims.separation` in the same direction on
   every seed.
8. The trade-off (`bound`): across backends (seed means), the Spearman rank correlation between
   correctness and at least one proxy is at most `claims.tradeoff` (negative or near zero).
9-. Sanity checks (never counted): the identity control moves no proxy; with the reference judge,
   the judge accepts every correct corpus proof and rejects every flawed one; each verbose
   backend keeps its inner backend's correctness and is less concise.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from reprolab.core.claims import (
    bound_check,
    count_check,
    paired_check,
    sanity_check,
    tolerance_check,
)
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats

PERTURBATIONS = {
    "padding": "padding",
    "computational_detour": "computational detour",
    "cognitive_detour": "cognitive detour",
    "duplication": "duplication",
    "technique_swap": "technique swap",
    "identity": "identity (control)",
}
"""perturb.PERTURBATIONS with their names in the table (results imports no sympy)."""
OWN = {
    "conciseness": "padding",
    "computational_ease": "computational_detour",
    "cognitive_simplicity": "cognitive_detour",
    "diversity": "duplication",
    "adaptivity": "technique_swap",
}
"""Each proxy's own perturbation (perturb.EXPECTED turned round)."""
PROXIES = {
    "conciseness": "conciseness",
    "computational_ease": "computational ease",
    "cognitive_simplicity": "cognitive simplicity",
    "diversity": "diversity",
    "adaptivity": "adaptivity",
}
COLUMNS = {"correctness": "correctness", **PROXIES, "proofrank": "ProofRank score"}
NOTES = __doc__.split("\n\n", 2)[2]

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


def validity_row(name: str) -> str:
    return f"Δ under {PERTURBATIONS[name]}"


def backend_row(name: str) -> str:
    return f"backend {name}"


def validity_values(runs: Runs, perturbation: str, proxy: str) -> np.ndarray:
    """One mean change per seed."""
    return np.array([r["validity"][perturbation][proxy] for r in runs], dtype=float)


def harness_values(runs: Runs, backend: str, measure: str) -> np.ndarray:
    """One value per seed of a backend's measure."""
    return np.array([r["harness"][backend]["measures"][measure] for r in runs], dtype=float)


def table(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> Table:
    """The two blocks of the module docstring."""
    out: list[Record] = []
    absent = set()
    for name in PERTURBATIONS:
        absent |= {(validity_row(name), COLUMNS[c]) for c in ("correctness", "proofrank")}
        for proxy in PROXIES:
            out += [
                Record(validity_row(name), COLUMNS[proxy], s, float(v))
                for s, v in zip(seeds, validity_values(runs, name, proxy), strict=True)
            ]
    for backend in params["backends"]:
        for measure, column in COLUMNS.items():
            out += [
                Record(backend_row(backend), column, s, float(v))
                for s, v in zip(seeds, harness_values(runs, backend, measure), strict=True)
            ]
    return Table(
        out,
        [validity_row(n) for n in PERTURBATIONS] + [backend_row(b) for b in params["backends"]],
        list(COLUMNS.values()),
        "ProofRank: (top) discriminant validity, the mean change of each proxy when the corpus's "
        "correct proofs are perturbed; (bottom) the harness, each backend's correctness and "
        "κ-gated proxies. Mean ± std over seeds.",
        frozenset(absent),
    )


def diagonal_checks(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> list[dict]:
    """Claims 1-5: each proxy's drop under its own perturbation against the strongest other."""
    rules = params["claims"]
    checks = []
    for proxy, own in OWN.items():
        drops = {p: -validity_values(runs, p, proxy) for p in PERTURBATIONS}
        rival = max((p for p in PERTURBATIONS if p != own), key=lambda p: drops[p].mean())
        checks.append(
            paired_check(
                f"{PROXIES[proxy].capitalize()} falls most under its own perturbation "
                f"({PERTURBATIONS[own]}), more than under {PERTURBATIONS[rival]}.",
                f"drop of {PROXIES[proxy]} (mean over correct corpus proofs)",
                own,
                rival,
                drops[own],
                drops[rival],
                seeds,
                alpha=float(rules["alpha"]),
                min_effect=float(rules["min_effect"]),
            )
        )
    return checks


def rate_estimates(params: dict[str, Any], runs: Runs) -> np.ndarray:
    """Per seed, the non-compliance rate read back from adaptivity (claim 6)."""
    rules = params["claims"]
    noncompliant = harness_values(runs, rules["noncompliant"], "adaptivity")
    compliant = harness_values(runs, rules["compliant"], "adaptivity")
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 - noncompliant / compliant


def pooled_rate(params: dict[str, Any], runs: Runs) -> float:
    """The non-compliance rate read back from adaptivity over all seeds at once (claim 6):
    every seed asks the same number of instructed requests, so the pooled adaptivity of a
    backend is its mean over seeds."""
    rules = params["claims"]
    noncompliant = harness_values(runs, rules["noncompliant"], "adaptivity").mean()
    compliant = harness_values(runs, rules["compliant"], "adaptivity").mean()
    return float(1.0 - noncompliant / compliant) if compliant > 0 else float("nan")


def rate_check(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> dict:
    """Claim 6."""
    rules = params["claims"]
    injected = float(params["backends"][rules["noncompliant"]]["rate"])
    per_seed = rate_estimates(params, runs)
    return tolerance_check(
        f"Adaptivity recovers the non-compliance rate injected into {rules['noncompliant']}.",
        f"1 − adaptivity({rules['noncompliant']}) / adaptivity({rules['compliant']}), "
        "adaptivities pooled over seeds",
        {"pooled over seeds": pooled_rate(params, runs)},
        injected,
        float(rules["rate_tolerance"]),
        {"per_seed": {f"seed {s}": float(v) for s, v in zip(seeds, per_seed, strict=True)}},
    )


def derived(params: dict[str, Any]) -> set[frozenset[str]]:
    """The pairs of backends built one from the other."""
    return {frozenset(pair) for pair in params["claims"]["derived"]}


def separation(params: dict[str, Any], runs: Runs) -> list[dict[str, Any]]:
    """Claim 7's pairs: every pair of backends of equal positive correctness, not derived, and
    the proxies that separate it."""
    rules = params["claims"]
    gap, least = float(rules["equal_correctness"]), float(rules["separation"])
    found = []
    for a, b in combinations(params["backends"], 2):
        if frozenset((a, b)) in derived(params):
            continue
        ca, cb = harness_values(runs, a, "correctness"), harness_values(runs, b, "correctness")
        if min(ca.mean(), cb.mean()) <= 0 or abs(ca.mean() - cb.mean()) > gap:
            continue
        apart = []
        for proxy in PROXIES:
            diff = harness_values(runs, a, proxy) - harness_values(runs, b, proxy)
            if np.all(diff >= least) or np.all(diff <= -least):
                apart.append(proxy)
        found.append({"pair": [a, b], "correctness": [ca.mean(), cb.mean()], "separated_by": apart})
    return found


def separation_check(params: dict[str, Any], runs: Runs) -> dict:
    """Claim 7."""
    pairs = separation(params, runs)
    return count_check(
        "Among backends of equal correctness, the proxies separate them.",
        "pairs of backends of equal positive correctness that some proxy separates on every seed",
        {"separated pairs": sum(bool(p["separated_by"]) for p in pairs)},
        {"separated pairs": ("at_least", 1)},
        {"pairs of equal correctness": pairs},
    )


def rank_correlations(params: dict[str, Any], runs: Runs) -> dict[str, float]:
    """Across backends (seed means), Spearman's ρ between correctness and each proxy (NaN when
    a proxy does not vary across backends)."""
    backends = list(params["backends"])
    correctness = [harness_values(runs, b, "correctness").mean() for b in backends]
    out = {}
    for proxy in PROXIES:
        values = [harness_values(runs, b, proxy).mean() for b in backends]
        if np.ptp(values) == 0 or np.ptp(correctness) == 0:
            out[proxy] = float("nan")
        else:
            out[proxy] = float(stats.spearmanr(correctness, values).statistic)
    return out


def tradeoff_check(params: dict[str, Any], runs: Runs) -> dict:
    """Claim 8."""
    found = rank_correlations(params, runs)
    finite = {k: v for k, v in found.items() if np.isfinite(v)}
    lowest = min(finite, key=finite.get) if finite else None
    return bound_check(
        "Quality trades off against correctness: across backends, the rank correlation between "
        "correctness and at least one proxy is negative or near zero.",
        "the lowest Spearman ρ(correctness, proxy) across backends",
        {f"ρ with {lowest}" if lowest else "no proxy varies": finite.get(lowest, float("nan"))},
        "at_most",
        float(params["claims"]["tradeoff"]),
        {"spearman": found},
    )


def sanity_checks(params: dict[str, Any], runs: Runs) -> list[dict]:
    """The sanity checks of the module docstring."""
    moved = max(abs(v) for r in runs for v in r["validity"]["identity"].values())
    checks = [
        sanity_check(
            "The identity control moves no proxy.",
            "largest |change| of any proxy under the identity, over seeds",
            "exactly 0",
            moved == 0.0,
            {"largest": moved},
        )
    ]
    if params["judge"]["kind"] == "reference":
        agreement = runs[0]["judge_on_corpus"]
        checks.append(
            sanity_check(
                "The reference judge is exact on the corpus.",
                "corpus proofs whose verdict matches their correctness label",
                "all of them",
                agreement["agree"] == agreement["proofs"],
                agreement,
            )
        )
    for name, spec in params["backends"].items():
        if spec["kind"] != "verbose":
            continue
        inner = spec["inner"]
        same = np.array_equal(
            harness_values(runs, name, "correctness"), harness_values(runs, inner, "correctness")
        )
        shorter = np.all(
            harness_values(runs, name, "conciseness") < harness_values(runs, inner, "conciseness")
        )
        checks.append(
            sanity_check(
                f"Padding keeps correctness and costs conciseness: {name} against {inner}.",
                "correctness equal and conciseness lower, on every seed",
                "both",
                bool(same and shorter),
                {"correctness_equal": bool(same), "less_concise": bool(shorter)},
            )
        )
    return checks


def claim_checks(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> list[dict]:
    """The module docstring's claims, in order."""
    return [
        *diagonal_checks(params, runs, seeds),
        rate_check(params, runs, seeds),
        separation_check(params, runs),
        tradeoff_check(params, runs),
        *sanity_checks(params, runs),
    ]


def per_theorem_means(runs: Runs, backend: str) -> dict[str, dict[str, float]]:
    """Per theorem, the seed means of a backend's correctness and proxies (the scatter's
    points)."""
    theorems = runs[0]["harness"][backend]["per_theorem"]
    return {
        tid: {
            key: float(np.mean([r["harness"][backend]["per_theorem"][tid][key] for r in runs]))
            for key in theorems[tid]
        }
        for tid in theorems
    }


def study_metrics(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> dict[str, Any]:
    """Seed statistics of every validity cell and harness measure, the rates read back, the
    rank correlations, the pairs of equal correctness, per-theorem means and one example proof
    per backend."""
    harness = {}
    for backend in params["backends"]:
        first = runs[0]["harness"][backend]
        harness[backend] = {
            "measures": {m: seed_stats(harness_values(runs, backend, m)) for m in COLUMNS},
            "instructed_correctness": seed_stats(
                [r["harness"][backend]["instructed_correctness"] for r in runs]
            ),
            "words": seed_stats([r["harness"][backend]["words"] for r in runs]),
            "unparsed": first["unparsed"],
            "example": first["example"],
            "per_theorem": per_theorem_means(runs, backend),
        }
    return {
        "seeds": list(seeds),
        "theorems": runs[0]["theorems"],
        "regularisation": runs[0]["regularisation"],
        "scales": runs[0]["scales"],
        "judge_on_corpus": runs[0]["judge_on_corpus"],
        "validity": {
            p: {proxy: seed_stats(validity_values(runs, p, proxy)) for proxy in PROXIES}
            for p in PERTURBATIONS
        },
        "harness": harness,
        "rate_estimates": seed_stats(rate_estimates(params, runs)),
        "rate_pooled": pooled_rate(params, runs),
        "rank_correlations": rank_correlations(params, runs),
        "equal_correctness_pairs": separation(params, runs),
    }


def curve_rows(params: dict[str, Any], runs: Runs, seeds: Sequence[int]) -> pd.DataFrame:
    """The proxy-vs-correctness scatter: per backend and proxy (series `<backend>/<proxy>`),
    one point per theorem, x = its correctness, y = the proxy (seed means)."""
    points = []
    for backend in params["backends"]:
        for values in per_theorem_means(runs, backend).values():
            points += [
                (f"{backend}/{proxy}", values["correctness"], values[proxy])
                for proxy in PROXIES
                if proxy in values
            ]
    return curve_frame(points)
