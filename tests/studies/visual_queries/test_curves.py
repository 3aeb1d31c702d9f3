"""curves.csv of visual_queries: accuracy with text (x = 0) then visual (x = 1) options."""

from reprolab.studies.visual_queries.results import curve_rows


def seed_run(text: float, visual: float) -> dict:
    out = {"n_test": 4}
    for family in ("tfr", "vfp", "cmd"):
        out |= {f"{family}_acc_text": text, f"{family}_acc_visual": visual}
    return out


def test_two_points_per_family_and_method_seed_means():
    runs = {
        "tinyvlm": [seed_run(80.0, 40.0), seed_run(70.0, 50.0)],
        "oracle": [seed_run(100.0, 100.0), seed_run(100.0, 100.0)],
    }
    rows = curve_rows({}, runs, [0, 1]).values.tolist()
    assert rows[:4] == [
        [0, "cmd/oracle", "100.000000"],
        [1, "cmd/oracle", "100.000000"],
        [0, "cmd/tinyvlm", "75.000000"],
        [1, "cmd/tinyvlm", "45.000000"],
    ]
    assert len(rows) == 2 * 3 * 2
    assert [r[1] for r in rows] == sorted(r[1] for r in rows)
