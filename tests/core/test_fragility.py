import pytest

from reprolab.core.claims import claims_document, paired_check
from reprolab.core.fragility import (
    FRAGILITY,
    fragility_record,
    mark_fragile,
    record_second_run,
    recorded_outcomes,
    study_digest,
)
from reprolab.core.index import claims_table
from reprolab.core.io import read_json, write_json
from reprolab.core.schemas import validate_claims

SEEDS = [0, 1, 2, 3]
PARAMS = {"lr": 0.1}
SECOND = {"ATEN_CPU_CAPABILITY": "default"}
PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
REFERENCE = ([0.9, 0.91, 0.92, 0.9], [0.56, 0.54, 0.57, 0.55])
FLIPPED = ([0.9, 0.9, 0.92, 0.91], [0.56, 0.44, 0.57, 0.49])
"""Per-seed values of a clear win and a near win; in the second run the near win fails."""


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
    record = fragility_record("toy", document(FLIPPED), SECOND, digest, "abc")
    assert [(o["statement"], o["holds"]) for o in record["outcomes"]] == [
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
    assert "fragile (holds at the pinned kernel level" in claims_table(marked["claims"])


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
    record = fragility_record("toy", rivals("b", "c", FLIPPED), SECOND, digest, "abc")
    pinned = rivals("d", "c", REFERENCE)["claims"]
    assert recorded_outcomes(pinned, record["outcomes"]) == [True, False]
    twice = [dict(pinned[0], metric="auc"), pinned[1]]
    assert recorded_outcomes(twice, record["outcomes"]) == [None, False]
    marked, status = mark_fragile(twice, record, digest)
    assert status["fragile"] == 1 and "1 check(s) without a counterpart" in status["text"]
    assert "fragile" not in marked[0] and marked[1]["fragile"]


def test_a_record_of_other_params_is_stale_and_marks_nothing():
    record = fragility_record("toy", document(FLIPPED), SECOND, study_digest(PARAMS, SEEDS), "a")
    marked = document(REFERENCE, record, study_digest({"lr": 0.2}, SEEDS))
    assert marked["fragility"]["status"] == "stale"
    assert not any("fragile" in c for c in marked["claims"]) and marked["claims_holding"] == 2
    assert document(REFERENCE)["fragility"]["status"] == "not run"


def second_run(folder, env, params=PARAMS):
    write_json(folder / "claims.json", document(FLIPPED))
    write_json(
        folder / "provenance.json",
        {
            "scale": "smoke",
            "seeds": SEEDS,
            "params": params,
            "git": {"sha": "0123456789abcdef"},
            "kernels": {"environment": env},
        },
    )
    return folder


def test_record_second_run_writes_the_record_and_checks_params_and_kernels(tmp_path):
    config = {"scale": "smoke", "cpu_kernels": {"torch": "avx2", "mkl": "AVX2", "onednn": "AVX2"}}
    config["toy"] = PARAMS
    record = record_second_run("toy", second_run(tmp_path / "b", SECOND), config, tmp_path)
    assert read_json(tmp_path / FRAGILITY) == record
    assert record["digest"] == study_digest(PARAMS, SEEDS) and record["commit"].startswith("0123")
    with pytest.raises(ValueError, match="used the pinned kernel level"):
        record_second_run("toy", second_run(tmp_path / "c", PINNED), config, tmp_path)
    with pytest.raises(ValueError, match="other `toy` params"):
        record_second_run("toy", second_run(tmp_path / "d", SECOND, {"lr": 1}), config, tmp_path)
