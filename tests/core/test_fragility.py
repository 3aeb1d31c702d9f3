import pytest

from reprolab.core.claims import claims_document, paired_check
from reprolab.core.fragility import (
    FRAGILITY,
    mark_fragile,
    record_second_run,
    recorded_outcomes,
    run_record,
    study_digest,
)
from reprolab.core.index import claims_table
from reprolab.core.io import read_json, write_json
from reprolab.core.params import load_yaml, study_params
from reprolab.core.schemas import validate_claims
from tests.conftest import ROOT

RESULTS = ROOT / "results"
SEEDS = [0, 1, 2, 3]
PARAMS = {"lr": 0.1}
SECOND = {"ATEN_CPU_CAPABILITY": "default"}
PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
REFERENCE = ([0.9, 0.91, 0.92, 0.9], [0.56, 0.54, 0.57, 0.55])
FLIPPED = ([0.9, 0.9, 0.92, 0.91], [0.56, 0.44, 0.57, 0.49])
"""Per-seed values of a clear win and a near win; in the second run the near win fails."""
AMD, INTEL = "AMD EPYC", "Intel(R) Xeon(R) Processor"


def one_run(values, env=SECOND, digest=None, cpu=AMD, commit="abc") -> dict:
    """The fragility record of one other run whose outcomes are those of `values`."""
    digest = study_digest(PARAMS, SEEDS) if digest is None else digest
    kernels = {"environment": env, "cpu_model": cpu}
    return {"study": "toy", "runs": [run_record(document(values), kernels, digest, commit)]}


def document(values, record=None, digest=""):
    base = [0.5] * 4
    checks = [
        paired_check(name, "acc", "m", "b", v, base, SEEDS)
        for name, v in zip(("clear win", "near win"), values, strict=True)
    ]
    return claims_document("toy", checks, "notes", record, digest)


def test_a_flipped_outcome_is_fragile_and_never_counts():
    assert [c["holds"] for c in document(REFERENCE)["claims"]] == [True, True]
    digest = study_digest(PARAMS, SEEDS)
    record = one_run(FLIPPED)
    assert [(o["statement"], o["holds"]) for o in record["runs"][0]["outcomes"]] == [
        ("clear win", True),
        ("near win", False),
    ]
    marked = document(REFERENCE, record, digest)
    validate_claims(marked, "marked claims.json")
    clear, near = marked["claims"]
    assert near["fragile"] and near["holds_pinned"] and not near["holds"]
    assert clear["fragile"] is False and clear["holds"] and "holds_pinned" not in clear
    assert marked["claims_holding"] == 1
    assert marked["fragility"]["status"] == "checked" and marked["fragility"]["fragile"] == 1
    assert marked["fragility"]["runs"] == [{"kernels": SECOND, "cpu_model": AMD}]
    assert (
        "1 other run(s): ATEN_CPU_CAPABILITY=default on AMD EPYC (commit abc)"
        in (marked["fragility"]["text"])
    )
    assert "fragile (holds at the pinned kernel level" in claims_table(marked["claims"])


def test_a_check_is_fragile_when_any_recorded_run_disagrees():
    """The other vendor's run at the pinned level agrees, the second level's does not."""
    digest = study_digest(PARAMS, SEEDS)
    record = one_run(REFERENCE, PINNED, cpu=INTEL)
    record["runs"] += one_run(FLIPPED)["runs"]
    marked = document(REFERENCE, record, digest)
    validate_claims(marked, "marked claims.json")
    assert [c["fragile"] for c in marked["claims"]] == [False, True]
    assert marked["fragility"]["fragile"] == 1 and len(marked["fragility"]["runs"]) == 2
    stale_too = {
        "study": "toy",
        "runs": [*one_run(FLIPPED, digest="old")["runs"], record["runs"][0]],
    }
    marked = document(REFERENCE, stale_too, digest)
    assert [c["fragile"] for c in marked["claims"]] == [False, False]
    assert len(marked["fragility"]["runs"]) == 1


def test_a_record_of_one_run_written_before_runs_were_listed_still_marks():
    run = one_run(FLIPPED)["runs"][0]
    legacy = {
        "study": "toy",
        "digest": run["digest"],
        "commit": run["commit"],
        "second_kernels": SECOND,
        "outcomes": run["outcomes"],
    }
    marked = document(REFERENCE, legacy, study_digest(PARAMS, SEEDS))
    assert [c["fragile"] for c in marked["claims"]] == [False, True]
    assert marked["fragility"]["second_kernels"] == SECOND and "runs" not in marked["fragility"]
    assert marked["fragility"]["text"].startswith("outcomes compared with a run at a second")


@pytest.mark.parametrize("study", sorted(p.parent.name for p in RESULTS.glob("*/fragility.json")))
def test_committed_claims_are_marked_as_their_record_marks_them_now(study):
    """The committed claims.json of a study, its checks restored to their own outcomes, marked
    again from its committed fragility.json: the same document (so the results committed with a
    record of either form are what the summary writes today)."""
    committed = read_json(RESULTS / study / "claims.json")
    record = read_json(RESULTS / study / FRAGILITY)
    restored = [
        {
            **{k: v for k, v in check.items() if k not in ("fragile", "holds_pinned")},
            "holds": check.get("holds_pinned", check["holds"]),
        }
        for check in committed["claims"]
    ]
    seeds = read_json(RESULTS / study / "provenance.json")["seeds"]
    config = {**load_yaml(ROOT / "params.yaml"), "scale": "smoke"}
    digest = study_digest(study_params(config, study), seeds)
    marked, status = mark_fragile(restored, record, digest)
    assert status == committed["fragility"]
    assert marked == committed["claims"]


def test_a_check_naming_a_rival_the_results_chose_is_found_by_kind_metric_and_method():
    """ssg's "beats the best baseline (abmil)" names the rival the run found strongest; at the
    second level another rival can be strongest, and the check is still compared."""
    base = [0.5] * 4

    def rivals(first: str, second: str, values) -> dict:
        checks = [
            paired_check(
                f"m beats the best baseline ({name}) on {metric}", metric, "m", name, v, base, SEEDS
            )
            for name, metric, v in zip((first, second), ("acc", "auc"), values, strict=True)
        ]
        return claims_document("toy", checks, "notes")

    digest = study_digest(PARAMS, SEEDS)
    run = run_record(rivals("b", "c", FLIPPED), {"environment": SECOND}, digest, "abc")
    record = {"study": "toy", "runs": [run]}
    pinned = rivals("d", "c", REFERENCE)["claims"]
    assert recorded_outcomes(pinned, run["outcomes"]) == [True, False]
    twice = [dict(pinned[0], metric="auc"), pinned[1]]
    assert recorded_outcomes(twice, run["outcomes"]) == [None, False]
    marked, status = mark_fragile(twice, record, digest)
    assert status["fragile"] == 1 and "1 check(s) without a counterpart" in status["text"]
    assert "fragile" not in marked[0] and marked[1]["fragile"]


def test_a_record_of_other_params_is_stale_and_marks_nothing():
    record = one_run(FLIPPED)
    marked = document(REFERENCE, record, study_digest({"lr": 0.2}, SEEDS))
    assert marked["fragility"]["status"] == "stale"
    assert not any("fragile" in c for c in marked["claims"]) and marked["claims_holding"] == 2
    assert document(REFERENCE)["fragility"]["status"] == "not run"


def provenance(folder, env, cpu, params=PARAMS):
    """A results/<id> folder's provenance.json as the summary writes it (the parts read here)."""
    write_json(
        folder / "provenance.json",
        {
            "scale": "smoke",
            "seeds": SEEDS,
            "params": params,
            "git": {"sha": "0123456789abcdef"},
            "kernels": {"environment": env, "cpu_model": cpu},
        },
    )
    return folder


def second_run(folder, env, cpu=AMD, params=PARAMS):
    write_json(folder / "claims.json", document(FLIPPED))
    return provenance(folder, env, cpu, params)


def test_record_second_run_adds_runs_and_checks_params_and_configuration(tmp_path):
    config = {"scale": "smoke", "cpu_kernels": {"torch": "avx2", "mkl": "AVX2", "onednn": "AVX2"}}
    config["toy"] = PARAMS
    own = provenance(tmp_path / "own", PINNED, AMD)
    record = record_second_run("toy", second_run(tmp_path / "b", SECOND), config, own)
    assert read_json(own / FRAGILITY) == record and len(record["runs"]) == 1
    [run] = record["runs"]
    assert run["digest"] == study_digest(PARAMS, SEEDS) and run["commit"].startswith("0123")
    assert run["kernels"] == SECOND and run["cpu_model"] == AMD
    with pytest.raises(ValueError, match="kernel configuration and processor vendor"):
        record_second_run("toy", second_run(tmp_path / "c", PINNED), config, own)
    other_vendor = record_second_run("toy", second_run(tmp_path / "i", PINNED, INTEL), config, own)
    assert [r["cpu_model"] for r in other_vendor["runs"]] == [AMD, INTEL]
    again = record_second_run(
        "toy", second_run(tmp_path / "b2", SECOND, "AMD EPYC 9654"), config, own
    )
    assert [r["cpu_model"] for r in again["runs"]] == [INTEL, "AMD EPYC 9654"]
    with pytest.raises(ValueError, match="other `toy` params"):
        record_second_run("toy", second_run(tmp_path / "d", SECOND, params={"lr": 1}), config, own)
