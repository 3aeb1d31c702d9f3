"""The table, claims and bound check from constructed run files."""

from pathlib import Path

import numpy as np

from reprolab.core.io import read_json, write_json
from reprolab.core.schemas import validate_claims
from reprolab.core.summary import summarize_study
from reprolab.studies.pem.results import claim_checks, load_runs, snr_key

METHODS = ["pem", "detmax", "corinfomax", "nsm", "fastica"]
PARAMS = {
    "methods": METHODS,
    "noise_db": [30],
    "sources": {"r0": {"domain": "box", "rho": 0.0}, "r7": {"domain": "box", "rho": 0.7}},
    "claims": {"alpha": 0.05, "margin_db": 3.0},
    "table_digits": 1,
    "data": {"n_samples": 100},
}
SINR = {  # per source and method, one value per seed
    "r0": {"pem": [20, 21, 22], "detmax": [25, 26, 27], "corinfomax": [24, 24, 25],
           "nsm": [8, 9, 7], "fastica": [26, 26, 26]},
    "r7": {"pem": [8, 9, 10], "detmax": [10, 10.5, 11], "corinfomax": [15, 16, 14],
           "nsm": [5, 5, 6], "fastica": [3, 2, 3]},
}  # fmt: skip


def _bound(scale: float) -> dict:
    x = np.array([0.1, 0.2]) * scale
    return {
        "delta": 0.5 * float(np.sum(x - np.log1p(x))),
        "lower": 0.25 * float(np.sum(x**2 / (1 + x))),
        "upper": 0.25 * float(np.sum(x**2)),
        "x_max": float(x.max()),
        "tightness": 1.1 * scale,
    }


def write_runs(root: Path, broken: bool = False) -> None:
    for seed in range(3):
        sources = {}
        for source, methods in SINR.items():
            sources[source] = {m: {"sinr": v[seed]} for m, v in methods.items()}
            final = methods["pem"][seed]
            sources[source]["pem"]["curves"] = {"sinr": [final / 2, final]}
            for m in ("pem", "detmax"):
                sources[source][m]["bound"] = _bound(1.0 + seed)
        if broken:
            sources["r7"]["pem"]["bound"]["delta"] = 10.0
        write_json(
            root / snr_key(30) / f"seed{seed}" / "metrics.json", {"seed": seed, "sources": sources}
        )


def test_table_claims_and_metrics(tmp_path: Path):
    write_runs(tmp_path / "runs")
    summarize_study("pem", PARAMS, [0, 1, 2], tmp_path)
    table = (tmp_path / "table.md").read_text()
    assert "| pem | 21.0 ± 1.0 | 9.0 ± 1.0 |" in table
    assert "r7 @ 30 dB: SINR (dB)" in table
    document = read_json(tmp_path / "claims.json")
    validate_claims(document, "pem claims.json")
    claims = document["claims"]
    verdicts = {c["statement"]: c["holds"] for c in claims}
    assert verdicts == {
        "PEM beats NSM on SINR (ρ = 0.7, 30 dB)": True,
        "PEM beats FastICA on SINR (ρ = 0.7, 30 dB)": True,
        "PEM is within 3 dB of batch det-max (ρ = 0.7, 30 dB)": True,  # 9 vs 10.5 - 3
        "PEM is within 3 dB of CorInfoMax (ρ = 0.7, 30 dB)": False,  # 9 vs 15 - 3
        "The spectral bounds on the surrogate error hold on every PEM-family run": True,
    }
    within = next(c for c in claims if "det-max" in c["statement"])
    assert within["methods"] == ["pem", "detmax"] and within["rule"]["margin"] == 3.0
    assert np.isclose(within["mean_difference"], 9.0 - 10.5)
    assert within["p_adjusted"] > within["p_value"]  # Holm over the four paired checks
    assert claims[-1]["kind"] == "sanity"
    metrics = read_json(tmp_path / "metrics.json")
    assert metrics["sinr"]["snr30"]["r0"]["nsm"]["per_seed"] == [8, 9, 7]
    assert metrics["surrogate_bound"]["snr30"]["r7"]["pem"]["tightness"]["mean"] == 2.2
    assert metrics["claims_holding"] == "3/4"  # the sanity check is not counted


def test_a_violated_bound_is_reported(tmp_path: Path):
    write_runs(tmp_path / "runs", broken=True)
    summarize_study("pem", PARAMS, [0, 1, 2], tmp_path)
    check = read_json(tmp_path / "claims.json")["claims"][-1]
    assert not check["holds"]
    assert check["details"]["violations"] == [f"r7 @ 30 dB, pem, seed {s}" for s in range(3)]


def test_claims_skip_methods_that_were_not_run(tmp_path: Path):
    write_runs(tmp_path / "runs")
    params = {**PARAMS, "methods": ["pem", "nsm"]}
    checks = claim_checks(params, load_runs(params, [0, 1, 2], tmp_path / "runs"), [0, 1, 2])
    assert [c.get("methods") for c in checks] == [["pem", "nsm"], None]  # and the sanity check
