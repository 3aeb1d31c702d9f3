import pytest

from reprolab.core.claims import (
    bound_check,
    claims_document,
    count_check,
    paired_check,
    sanity_check,
    tolerance_check,
)
from reprolab.core.schemas import validate_claims


def check(a, b, **kw):
    return paired_check("m beats b", "acc", "m", "b", a, b, list(range(len(a))), **kw)


def test_clear_win_holds():
    result = check([0.90, 0.91, 0.92, 0.93, 0.94], [0.80, 0.82, 0.81, 0.80, 0.83])
    assert result["holds"] and result["p_value"] < 0.01 and result["wins"] == "5/5"
    assert result["per_seed"]["m"][0] == 0.90


def test_noise_fails():
    result = check([0.90, 0.80, 0.91, 0.79, 0.85], [0.85, 0.85, 0.85, 0.85, 0.85])
    assert not result["holds"]


def test_wrong_direction_fails_even_if_significant():
    result = check([0.1, 0.2, 0.1, 0.3], [0.5, 0.6, 0.5, 0.6])
    assert not result["holds"]
    assert check([0.1, 0.2, 0.1, 0.3], [0.5, 0.6, 0.5, 0.6], direction="less")["holds"]


def test_constant_difference_is_handled():
    assert check([1.0, 2.0, 3.0], [0.5, 1.5, 2.5])["holds"]
    assert not check([1.0, 2.0], [1.0, 2.0])["holds"]


def test_sign_test():
    result = check([2, 2, 2, 2, 2, 2], [1, 1, 1, 1, 1, 1], test="sign")
    assert result["p_value"] == pytest.approx(1 / 64) and result["holds"]


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError, match="one value per seed"):
        paired_check("s", "acc", "m", "b", [1, 2], [1], [0, 1])


def test_margin_is_in_the_rule_and_the_values_stay_raw():
    # "m is within 0.5 of b": m trails b by 0.2 on every seed.
    result = check([1.0, 2.0, 3.0, 4.0], [1.2, 2.2, 3.2, 4.2], margin=0.5)
    assert result["holds"] and result["rule"]["margin"] == 0.5
    assert result["per_seed"]["b"] == [1.2, 2.2, 3.2, 4.2]
    assert result["mean_difference"] == pytest.approx(-0.2)
    assert not check([1.0, 2.0, 3.0, 4.0], [1.2, 2.2, 3.2, 4.2])["holds"]


def test_min_effect_must_be_exceeded():
    a, b = [1.1, 2.1, 3.1, 4.12], [1.0, 2.0, 3.0, 4.0]
    assert check(a, b)["holds"]
    assert not check(a, b, min_effect=0.5)["holds"]


def test_effect_size_has_an_interval_around_the_mean_difference():
    effect = check([0.9, 0.91, 0.92, 0.93, 0.94], [0.8, 0.82, 0.81, 0.8, 0.83])["effect_size"]
    assert effect["ci_low"] < effect["value"] < effect["ci_high"] and effect["ci_low"] > 0
    assert effect["cohens_dz"] > 1


def test_a_seed_without_a_finite_value_fails_with_a_note():
    result = check([1.0, float("nan"), 3.0], [0.0, 0.0, 0.0])
    assert not result["holds"] and result["p_value"] is None and "seed(s) [1]" in result["note"]


def test_holm_adjusts_the_paired_checks_and_redecides_holds():
    strong = check([2.0, 2.1, 2.2, 2.3, 2.4], [1.0, 1.0, 1.1, 1.0, 1.1])
    weak = check([1.05, 1.0, 1.12, 1.0, 1.1], [1.0, 1.01, 1.0, 0.99, 1.0])
    assert weak["holds"] and 0.01 < weak["p_value"] < 0.05
    sanity = sanity_check("oracle is exact", "acc", "oracle reads the truth", True)
    document = claims_document("demo", [strong, weak, sanity], "notes")
    adjusted = {c["statement"]: c for c in document["claims"]}
    strong_after, weak_after = document["claims"][0], document["claims"][1]
    assert strong_after["p_adjusted"] == pytest.approx(2 * strong["p_value"])
    assert weak_after["p_adjusted"] == pytest.approx(max(weak["p_value"], 2 * strong["p_value"]))
    assert weak_after["holds_unadjusted"] and weak_after["p_adjusted"] >= weak_after["p_value"]
    assert adjusted["oracle is exact"]["holds"]
    # The sanity check is shown but never counted.
    holding = int(strong_after["holds"]) + int(weak_after["holds"])
    assert (document["claims_holding"], document["claims_counted"]) == (holding, 2)
    validate_claims(document, "demo")


def test_holm_can_turn_a_claim_that_held_into_one_that_fails():
    weak = check([1.05, 1.0, 1.12, 1.0, 1.1], [1.0, 1.01, 1.0, 0.99, 1.0])
    noise = check([1.0, 0.0, 1.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5, 0.5])
    after = claims_document("demo", [weak, noise, noise], "notes")["claims"][0]
    assert weak["holds"] and not after["holds"] and after["p_adjusted"] == 3 * weak["p_value"]


def test_count_tolerance_and_bound_checks():
    count = count_check(
        "never diverges", "diverged runs", {"diverged": 0, "runs": 10}, {"diverged": ("at_most", 0)}
    )
    assert count["holds"] and count["rule"]["text"] == "diverged ≤ 0"
    assert not count_check("x", "m", {"n": 2}, {"n": ("at_least", 3)})["holds"]
    with pytest.raises(ValueError, match="no count for limit"):
        count_check("x", "m", {"n": 2}, {"k": ("at_least", 3)})
    assert tolerance_check("slope", "s", {"a": 0.52, "b": 0.47}, 0.5, 0.05)["holds"]
    assert not tolerance_check("slope", "s", {"a": 0.56}, 0.5, 0.05)["holds"]
    assert bound_check("gap", "g", {"n=10": 0.1, "n=20": 0.2}, "at_most", 0.2)["holds"]
    assert not bound_check("gap", "g", {"n=10": float("nan")}, "at_most", 0.2)["holds"]
    document = claims_document("demo", [count], "n")
    validate_claims(document, "demo")


def test_the_schema_rejects_a_check_without_its_kinds_numbers():
    document = claims_document("demo", [check([1.0, 2.0], [0.0, 0.0])], "n")
    del document["claims"][0]["p_adjusted"]
    with pytest.raises(ValueError, match="p_adjusted"):
        validate_claims(document, "demo claims.json")
    with pytest.raises(ValueError, match="kind"):
        claims_document("demo", [{"statement": "s", "kind": "benchmark", "holds": True}], "n")


def test_welch_compares_unpaired_samples_and_says_so():
    holds = check([0.30, 0.32, 0.31, 0.33], [0.10, 0.20, 0.12, 0.15], test="welch")
    assert holds["holds"] and holds["wins"] == "16/16"
    assert holds["effect_size"]["measure"] == "difference of means (unpaired)"
    assert (
        holds["effect_size"]["ci_low"] < holds["mean_difference"] < holds["effect_size"]["ci_high"]
    )
    assert "unpaired" in holds["rule"]["text"] and "Welch" in holds["rule"]["text"]
    # the same values paired by index give another p: the seed order does not matter to Welch
    shuffled = check([0.33, 0.31, 0.30, 0.32], [0.10, 0.20, 0.12, 0.15], test="welch")
    assert shuffled["p_value"] == pytest.approx(holds["p_value"])
    noise = check([0.30, 0.10, 0.31, 0.12], [0.11, 0.29, 0.13, 0.3], test="welch")
    assert not noise["holds"]
    small = check([0.30, 0.32, 0.31, 0.33], [0.29, 0.31, 0.30, 0.32], test="welch", min_effect=0.02)
    assert small["holds_unadjusted"] is False
    validate_claims(claims_document("s", [holds, noise, small], "notes"), "welch claims")
