from pathlib import Path

import pytest

from reprolab.core.tables import Record, seed_stats, summarize, wide_table, write_table


def records():
    return [
        Record(m, c, s, v)
        for m, base in (("bp", 0.9), ("dfa", 0.8))
        for c in ("acc", "loss")
        for s, v in enumerate([base, base + 0.02])
    ]


def test_mean_and_sample_std():
    summary = summarize(records(), ["bp", "dfa"], ["acc", "loss"])
    row = summary[(summary.method == "dfa") & (summary.column == "acc")].iloc[0]
    assert row["mean"] == pytest.approx(0.81) and row["std"] == pytest.approx(0.0141421356)
    assert row["n"] == 2


def test_wide_table_keeps_order_and_formats_cells():
    table = wide_table(summarize(records(), ["dfa", "bp"], ["loss", "acc"]), digits=3)
    assert list(table.columns) == ["method", "loss", "acc"]
    assert list(table.method) == ["dfa", "bp"]
    assert table.iloc[1]["acc"] == "0.910 ± 0.014"


def test_a_cell_that_does_not_apply_is_a_dash():
    rows = records() + [Record("dfa", "b", s, 3.0) for s in (0, 1)]
    summary = summarize(rows, ["bp", "dfa"], ["b"], not_applicable={("bp", "b")})
    assert summary.loc[summary.method == "bp", "n"].item() == 0
    assert list(wide_table(summary, digits=1)["b"]) == ["—", "3.0 ± 0.0"]


def test_a_nan_value_stays_visible():
    """A NaN that a run produced (a diverged run) is shown as such, not as a dash."""
    rows = [Record("bp", "b", s, float("nan")) for s in (0, 1)]
    assert list(wide_table(summarize(rows, ["bp"], ["b"]), digits=1)["b"]) == ["nan ± nan"]


def test_missing_cell_is_an_error():
    with pytest.raises(ValueError, match="method 'x'"):
        summarize(records(), ["x"], ["acc"])


def test_writes_three_formats(tmp_path: Path):
    write_table(summarize(records(), ["bp", "dfa"], ["acc"]), tmp_path / "table", 2, "cap_tion")
    assert (tmp_path / "table.csv").read_text().splitlines()[0] == "method,acc"
    assert "| bp | 0.91 ± 0.01 |" in (tmp_path / "table.md").read_text()
    tex = (tmp_path / "table.tex").read_text()
    assert r"0.91 $\pm$ 0.01" in tex and r"cap\_tion" in tex


def test_seed_stats_keeps_mean_sample_std_and_values():
    stats = seed_stats([1.0, 2.0, 3.0])
    assert stats["mean"] == 2.0 and stats["std"] == 1.0
    assert stats["per_seed"].tolist() == [1.0, 2.0, 3.0]
    assert seed_stats([5.0])["std"] == 0.0
