"""The strap table, claims and metrics from constructed per-seed run files (jobs.run_seed's
format): rivals by mean, the oracle's tie-break, the tolerance's sign, the sanity check and the
"—" cells of rows that did not run."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reprolab.core.io import read_json, write_json
from reprolab.core.schemas import validate_claims
from reprolab.core.summary import summarize_study
from reprolab.studies.strap.adapters import placement, placement_parameters
from reprolab.studies.strap.results import (
    NAMES,
    claim_checks,
    load_runs,
    oracle,
    strongest_uniform,
    study_metrics,
)

from .conftest import BOTTLENECK, CLAIMS, WIDTH

SEEDS = [0, 1, 2]
LAYERS = 4
B_STAR = 2
HEAD = 6 * (5 * WIDTH) + 6
ROWS = ["probe", "spatial_all", "temporal_all", "st_adapter", "aim", "strap", "strap_reversed"]
COARSE_ROWS = ["temporal_all", "st_adapter", "aim", "strap"]
PARAMS = {
    "rows": ROWS,
    "coarse_rows": COARSE_ROWS,
    "claims": CLAIMS,
    "table_digits": 1,
}
"""The parts of the strap section the summary reads."""

FINE = {
    "probe": [50.0, 52.0, 51.0],
    "spatial_all": [60.0, 61.0, 62.0],
    "temporal_all": [79.0, 60.0, 61.0],  # the best single seed, not the best mean
    "st_adapter": [72.0, 73.0, 74.0],  # the strongest uniform by mean
    "aim": [70.0, 71.0, 70.0],
    "strap": [81.0, 82.0, 81.0],
    "strap_reversed": [65.0, 66.0, 64.0],
}
COARSE = {
    "temporal_all": [88.0, 89.0, 90.0],
    "st_adapter": [90.0, 91.0, 92.0],
    "aim": [89.0, 90.0, 91.0],
    "strap": [89.5, 91.0, 91.5],
}
MFLOPS = {
    "probe": 1.0,
    "spatial_all": 1.2,
    "temporal_all": 1.3,
    "st_adapter": 1.6,
    "aim": 1.9,
    "strap": 1.25,
    "strap_reversed": 1.25,
}
SWEEP = {1: 75.0, 3: 78.0}  # the interior points other than b* (b* = 2 is STRAP's row)
TS = [0.1, 0.2, 0.6, 0.9]


def result(row: str, accuracy: float, boundary: int | None) -> dict:
    """One placement's entry as jobs.run_placement and run_task write it."""
    plan = placement(row, LAYERS, boundary)
    adapters = placement_parameters(plan, WIDTH, BOTTLENECK)
    flops = MFLOPS.get(row, 1.25) * 1e6
    return {
        "accuracy": accuracy,
        "parameters": adapters + HEAD,
        "adapter_parameters": adapters,
        "closed_form_parameters": adapters,
        "flops": int(flops),
        "final_loss": 0.5,
        "lr": 0.01,
        "placement": plan,
        "boundary": boundary,
    }


def sensitivity(ts: list[float], b_star: int) -> dict:
    return {
        "ts": ts,
        "cka": [0.01, 0.02, 0.05, 0.1],
        "random_ts": [0.5, 0.5, 0.5, 0.5],
        "boundary": {"segment": b_star, "threshold": b_star, "cka": b_star, "random": 3},
    }


def make_run(
    seed: int,
    fine: dict = FINE,
    coarse: dict = COARSE,
    ts: list[float] = TS,
    b_star: int = B_STAR,
    sweep: dict = SWEEP,
) -> dict:
    """One seed's metrics.json, built as jobs.run_seed builds it."""
    i = SEEDS.index(seed)
    ts = [v + 0.01 * i for v in ts]

    def boundary(row: str) -> int | None:
        return b_star if row.startswith("strap") else None

    fine_rows = {row: result(row, fine[row][i], boundary(row)) for row in ROWS}
    points = {}
    for b in range(LAYERS + 1):
        if b == 0:
            points[str(b)] = {**fine_rows["temporal_all"], "boundary": None}
        elif b == LAYERS:
            points[str(b)] = {**fine_rows["spatial_all"], "boundary": None}
        elif b == b_star:
            points[str(b)] = fine_rows["strap"]
        else:
            points[str(b)] = result("strap", sweep[b], b)
    return {
        "seed": seed,
        "layers": LAYERS,
        "tasks": {
            "fine": {"sensitivity": sensitivity(ts, b_star), "rows": fine_rows, "sweep": points},
            "coarse": {
                "sensitivity": sensitivity(ts, b_star),
                "rows": {row: result(row, coarse[row][i], boundary(row)) for row in COARSE_ROWS},
            },
        },
    }


def write_runs(out: Path, runs: list[dict]) -> None:
    for run in runs:
        write_json(out / "runs" / f"seed{run['seed']}" / "metrics.json", run)


def summarize(out: Path, runs: list[dict], params: dict = PARAMS) -> dict:
    """Write the runs and the summary into `out`; the claims document, validated."""
    write_runs(out, runs)
    summarize_study("strap", params, SEEDS, out_dir=out)
    document = read_json(out / "claims.json")
    validate_claims(document, "strap claims.json")
    return document


def by_metric(document: dict) -> dict[str, dict]:
    return {c["metric"]: c for c in document["claims"]}


TREND = "Spearman ρ of TS_l against block depth (fine task), per seed"
FINE_TOP1 = "fine (motion) top-1 (%)"
COARSE_TOP1 = "coarse (appearance) top-1 (%)"
REDUCTION = "trainable-parameter reduction (%) against each placement, smallest over seeds"
COST = "inference FLOPs per clip, STRAP over the placement's, largest over seeds"
TOLERANCE = "b* − oracle b (blocks), per seed"
SANITY = "adapter parameters, counted on the model and in closed form"


def test_every_claim_holds_on_good_runs(tmp_path):
    document = summarize(tmp_path, [make_run(s) for s in SEEDS])
    checks = by_metric(document)
    assert list(checks) == [TREND, FINE_TOP1, REDUCTION, COST, COARSE_TOP1, TOLERANCE, SANITY]
    assert {m: c["holds"] for m, c in checks.items()} == dict.fromkeys(checks, True)
    assert (document["claims_holding"], document["claims_counted"]) == (6, 6)
    assert checks[SANITY]["kind"] == "sanity"
    assert checks[TREND]["values"] == {f"seed {s}": pytest.approx(1.0) for s in SEEDS}
    reduction = checks[REDUCTION]["values"]
    st = placement_parameters(placement("st_adapter", LAYERS), WIDTH, BOTTLENECK) + HEAD
    ours = placement_parameters(placement("strap", LAYERS, B_STAR), WIDTH, BOTTLENECK) + HEAD
    assert reduction["ST-Adapter"] == pytest.approx(100.0 * (1 - ours / st))
    assert set(reduction) == {"ST-Adapter", "AIM"}
    assert checks[COST]["values"]["ST-Adapter"] == pytest.approx(1.25 / 1.6)
    metrics = read_json(tmp_path / "metrics.json")
    assert metrics["claims_holding"] == "6/6"
    assert metrics["oracle_b"] == [2, 2, 2]
    assert (tmp_path / "table.csv").is_file() and (tmp_path / "table.tex").is_file()
    curves = pd.read_csv(tmp_path / "curves.csv")
    assert set(curves["series"]) == {"ts", "random_ts", "cka", "sweep_top1"}
    sweep = curves[curves["series"] == "sweep_top1"].sort_values("x")
    np.testing.assert_allclose(sweep["y"], [200 / 3, 75.0, 244 / 3, 78.0, 61.0], atol=1e-6)


def test_falling_temporal_sensitivity_fails_claim_1(tmp_path):
    falling = [0.9, 0.6, 0.2, 0.1]
    document = summarize(tmp_path, [make_run(s, ts=falling) for s in SEEDS])
    checks = by_metric(document)
    assert not checks[TREND]["holds"]
    assert checks[TREND]["values"]["seed 0"] == pytest.approx(-1.0)
    assert checks[FINE_TOP1]["holds"]


@pytest.mark.filterwarnings("ignore:An input array is constant")
def test_one_flat_seed_fails_claim_1(tmp_path):
    runs = [make_run(s) for s in SEEDS]
    runs[1]["tasks"]["fine"]["sensitivity"]["ts"] = [0.3, 0.3, 0.3, 0.3]  # ρ undefined
    assert not by_metric(summarize(tmp_path, runs))[TREND]["holds"]


def test_strap_worse_than_uniform_fails_claim_2(tmp_path):
    fine = {**FINE, "strap": [70.0, 71.0, 72.0]}
    checks = by_metric(summarize(tmp_path, [make_run(s, fine=fine) for s in SEEDS]))
    assert not checks[FINE_TOP1]["holds"]
    assert checks[FINE_TOP1]["mean_difference"] == pytest.approx(-2.0)


def test_strap_barely_better_fails_claim_2_by_the_minimum_effect(tmp_path):
    fine = {**FINE, "strap": [72.5, 73.4, 74.6]}  # +0.5 points: below min_effect = 1
    checks = by_metric(summarize(tmp_path, [make_run(s, fine=fine) for s in SEEDS]))
    assert not checks[FINE_TOP1]["holds"]


def test_the_strongest_uniform_is_chosen_by_mean(tmp_path):
    runs = [make_run(s) for s in SEEDS]
    assert strongest_uniform(PARAMS, runs, "fine") == "st_adapter"  # not temporal_all's 79
    assert strongest_uniform(PARAMS, runs, "coarse") == "st_adapter"
    checks = by_metric(summarize(tmp_path, runs))
    assert checks[FINE_TOP1]["methods"] == ["strap", "st_adapter"]
    assert "(ST-Adapter, the strongest)" in checks[FINE_TOP1]["statement"]
    assert checks[FINE_TOP1]["per_seed"]["st_adapter"] == FINE["st_adapter"]
    aim_best = {**COARSE, "aim": [95.0, 95.0, 95.0]}
    runs = [make_run(s, coarse=aim_best) for s in SEEDS]
    assert strongest_uniform(PARAMS, runs, "coarse") == "aim"
    assert strongest_uniform(PARAMS, runs, "fine") == "st_adapter"


def test_the_strongest_uniform_skips_rows_that_did_not_run():
    params = {**PARAMS, "coarse_rows": ["temporal_all", "strap"]}
    runs = [make_run(s) for s in SEEDS]
    for run in runs:
        for row in ("st_adapter", "aim"):
            del run["tasks"]["coarse"]["rows"][row]
    assert strongest_uniform(params, runs, "coarse") == "temporal_all"
    for run in runs:
        del run["tasks"]["coarse"]["rows"]["temporal_all"]
    with pytest.raises(
        ValueError, match="no uniform placement of claims.uniform ran on the coarse"
    ):
        strongest_uniform(params, runs, "coarse")


def test_strap_far_behind_on_the_coarse_task_fails_claim_5(tmp_path):
    coarse = {**COARSE, "strap": [85.0, 86.0, 87.5]}
    checks = by_metric(summarize(tmp_path, [make_run(s, coarse=coarse) for s in SEEDS]))
    assert not checks[COARSE_TOP1]["holds"]
    assert checks[COARSE_TOP1]["rule"]["margin"] == CLAIMS["coarse_margin"]


def test_parameter_and_cost_claims_fail_against_a_cheaper_baseline(tmp_path):
    params = {**PARAMS, "claims": {**CLAIMS, "parameter_baselines": ["temporal_all"]}}
    checks = by_metric(summarize(tmp_path, [make_run(s) for s in SEEDS], params))
    # STRAP (2 spatial + 2 temporal) has more parameters than 4 temporal adapters
    assert not checks[REDUCTION]["holds"]
    assert checks[COST]["values"] == {"temporal-all": pytest.approx(1.25 / 1.3)}
    assert checks[COST]["holds"]


def test_oracle_is_the_sweeps_argmax_shallower_of_ties():
    run = make_run(0, sweep={1: 90.0, 3: 90.0})
    b, best = oracle(run)
    assert b == 1 and best["accuracy"] == 90.0 and best["boundary"] == 1
    run = make_run(0, sweep={1: 70.0, 3: 90.0})
    assert oracle(run)[0] == 3
    run = make_run(0, sweep={1: 70.0, 3: 70.0}, fine={**FINE, "temporal_all": [99.0] * 3})
    assert oracle(run)[0] == 0  # the sweep's ends are temporal-all (0) and spatial-all (L)


def test_oracle_ties_are_ordered_by_number_not_text():
    run = make_run(0)
    sweep = run["tasks"]["fine"]["sweep"]
    for b in range(11, 1, -1):  # b = 10 sorts before 2 as text; keys also in reverse order
        sweep[str(b)] = {**sweep["1"], "accuracy": 99.0, "boundary": b}
    run["tasks"]["fine"]["sweep"] = dict(sorted(sweep.items(), key=lambda kv: kv[0]))
    assert oracle(run)[0] == 2


def test_tolerance_uses_b_star_minus_the_oracle_b(tmp_path):
    # oracle: b = 1 and b = 3 tie, the shallower (1) wins; b* = 3 is 2 blocks off
    runs = [make_run(s, b_star=3, sweep={1: 90.0, 2: 70.0}) for s in SEEDS]
    for run in runs:
        run["tasks"]["fine"]["rows"]["strap"]["accuracy"] = 90.0
    checks = by_metric(summarize(tmp_path, runs))
    assert checks[TOLERANCE]["values"] == {f"seed {s}": 2.0 for s in SEEDS}
    assert not checks[TOLERANCE]["holds"]
    below = [make_run(s, b_star=1, sweep={2: 70.0, 3: 95.0}) for s in SEEDS]
    checks = by_metric(summarize(tmp_path / "below", below))
    assert checks[TOLERANCE]["values"]["seed 0"] == -2.0  # negative: b* shallower than oracle
    assert not checks[TOLERANCE]["holds"]


def test_tolerance_of_one_block_holds(tmp_path):
    runs = [make_run(s, sweep={1: 70.0, 3: 95.0}) for s in SEEDS]
    checks = by_metric(summarize(tmp_path, runs))
    assert checks[TOLERANCE]["values"]["seed 1"] == -1.0
    assert checks[TOLERANCE]["holds"]


def test_sanity_fails_when_a_count_differs_from_its_closed_form(tmp_path):
    runs = [make_run(s) for s in SEEDS]
    runs[1]["tasks"]["coarse"]["rows"]["aim"]["adapter_parameters"] += 1
    document = summarize(tmp_path, runs)
    sanity = by_metric(document)[SANITY]
    assert not sanity["holds"]
    assert sanity["details"] == {"mismatches": ["seed 1 coarse aim"]}
    assert (document["claims_holding"], document["claims_counted"]) == (6, 6)  # never counted


def test_table_cells_and_dashes_for_rows_that_did_not_run(tmp_path):
    summarize(tmp_path, [make_run(s) for s in SEEDS])
    table = pd.read_csv(tmp_path / "table.csv", index_col="method", dtype=str)
    assert list(table.index) == [NAMES[r] for r in [*ROWS, "oracle_b"]]
    fine, coarse, _, _, cost, b = table.columns
    dash = "—"
    for row in ("probe", "spatial_all", "strap_reversed", "oracle_b"):
        assert table.loc[NAMES[row], coarse] == dash, row  # not run on the coarse task
    for row in COARSE_ROWS:
        assert table.loc[NAMES[row], coarse] != dash, row
    for row in ("probe", "spatial_all", "temporal_all", "st_adapter", "aim"):
        assert table.loc[NAMES[row], b] == dash, row  # no boundary
    assert table.loc["STRAP (b*)", b] == table.loc["oracle b", b] == "2.0 ± 0.0"
    assert table.loc["STRAP (b*)", fine] == table.loc["oracle b", fine] == "81.3 ± 0.6"
    assert table.loc["temporal-all", coarse] == "89.0 ± 1.0"
    assert table.loc["ST-Adapter", cost] == "100.0 ± 0.0"
    assert dash in (tmp_path / "table.md").read_text()
    assert dash in (tmp_path / "table.tex").read_text()


def test_study_metrics_per_row_and_task():
    runs = [make_run(s) for s in SEEDS]
    metrics = study_metrics(PARAMS, runs, SEEDS)
    assert set(metrics["rows"]["probe"]) == {"fine"}
    assert set(metrics["rows"]["strap"]) == {"fine", "coarse"}
    assert metrics["rows"]["strap"]["fine"]["accuracy"]["mean"] == pytest.approx(244 / 3)
    assert metrics["sensitivity"]["fine"]["boundaries"]["segment"] == [2, 2, 2]
    assert metrics["sensitivity"]["coarse"]["boundaries"]["random"] == [3, 3, 3]
    assert set(metrics["sweep"]) == {"0", "1", "2", "3", "4"}


def test_study_metrics_sensitivity_is_the_per_block_curve():
    runs = [make_run(s) for s in SEEDS]
    metrics = study_metrics(PARAMS, runs, SEEDS)
    curves = np.array([run["tasks"]["fine"]["sensitivity"]["ts"] for run in runs])
    stats = metrics["sensitivity"]["fine"]["ts"]
    np.testing.assert_allclose(np.asarray(stats["mean"], dtype=float), curves.mean(0))
    np.testing.assert_allclose(np.asarray(stats["std"], dtype=float), curves.std(0, ddof=1))
    single = study_metrics(PARAMS, runs[:1], SEEDS[:1])["sensitivity"]["fine"]["ts"]
    np.testing.assert_array_equal(np.asarray(single["std"], dtype=float), np.zeros(LAYERS))


def test_load_runs_in_seed_order(tmp_path):
    runs = [make_run(s) for s in SEEDS]
    write_runs(tmp_path, runs)
    loaded = load_runs(PARAMS, [2, 0], tmp_path / "runs")
    assert [run["seed"] for run in loaded] == [2, 0]
    assert loaded[1]["tasks"]["fine"]["rows"]["strap"]["accuracy"] == 81.0


def test_claim_checks_do_not_mutate_the_runs():
    runs = [make_run(s) for s in SEEDS]
    before = copy.deepcopy(runs)
    claim_checks(PARAMS, runs, SEEDS)
    assert runs == before
