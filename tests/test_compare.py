"""`reprolab compare`: results trees written with the project's own writers, then perturbed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from reprolab.cli import main
from reprolab.compare import CompareError, Tolerance, compare_trees
from reprolab.core.claims import claims_document, paired_check
from reprolab.core.io import read_json, write_csv, write_json
from reprolab.core.tables import NOT_APPLICABLE, Record, seed_stats, summarize, write_table

SEEDS = [0, 1, 2]
ACCURACY, LOSS = "accuracy (%)", "loss"
BEATS = "ours beats base on accuracy"
LOWER = "ours has a lower loss than base"
VALUES = {
    "ours": {ACCURACY: [90.0, 91.0, 92.0], LOSS: [0.30, 0.32, 0.31]},
    "base": {ACCURACY: [80.0, 81.0, 83.0], LOSS: [0.50, 0.52, 0.55]},
}


def write_study(root: Path, study: str = "toy", scale: float = 1.0) -> Path:
    """A study folder as results.py writes it; `scale` multiplies every value (a jitter)."""
    values = {
        m: {c: [scale * v for v in vs] for c, vs in cols.items()} for m, cols in VALUES.items()
    }
    records = [
        Record(method, column, seed, value)
        for method, columns in values.items()
        for column, per_seed in columns.items()
        for seed, value in zip(SEEDS, per_seed, strict=True)
    ]
    folder = root / study
    summary = summarize(records, list(values), [ACCURACY, LOSS])
    write_table(summary, folder / "table", digits=3, caption="toy")
    checks = [
        paired_check(BEATS, ACCURACY, "ours", "base", *_pair(values, ACCURACY), SEEDS),
        paired_check(LOWER, LOSS, "ours", "base", *_pair(values, LOSS), SEEDS, direction="less"),
    ]
    write_json(folder / "claims.json", claims_document(study, checks, "toy claims"))
    metrics = {m: {c: seed_stats(vs) for c, vs in cols.items()} for m, cols in values.items()}
    write_json(folder / "metrics.json", {"seeds": SEEDS, **metrics})
    return folder


def _pair(values: dict, column: str) -> tuple[list[float], list[float]]:
    return values["ours"][column], values["base"][column]


def set_cell(folder: Path, method: str, column: str, text: str) -> None:
    """Overwrite one 'mean ± std' cell of a study's table.csv."""
    table = pd.read_csv(folder / "table.csv", dtype=str, keep_default_na=False)
    table.loc[table.method == method, column] = text
    write_csv(folder / "table.csv", table)


def edit_claims(folder: Path, edit) -> None:
    """Apply `edit` to the list of checks in a study's claims.json."""
    document = read_json(folder / "claims.json")
    document["claims"] = edit(document["claims"])
    write_json(folder / "claims.json", document)


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    """Two identical results trees, A and B, each with the study 'toy'."""
    a, b = tmp_path / "a", tmp_path / "b"
    write_study(a)
    write_study(b)
    return a, b


def test_identical_trees_agree(trees):
    report = compare_trees(*trees)
    assert report.ok
    lines = report.to_text().splitlines()
    assert "toy: 4/4 cells agree, 2/2 claim outcomes equal, 23/23 metrics numbers agree" in lines
    assert lines[-1] == "all claim outcomes equal: yes"


def test_a_cell_beyond_tolerance_is_named(trees):
    a, b = trees
    set_cell(a / "toy", "ours", ACCURACY, "99.000 ± 1.000")  # B: 91.000 ± 1.000
    report = compare_trees(a, b)
    assert not report.ok and not report.all_cells_agree and report.all_claims_equal
    [line] = [x for x in report.to_text().splitlines() if x.startswith("toy: cell")]
    assert f"row 'ours', column '{ACCURACY}'" in line
    assert "A 99 ± 1, B 91 ± 1" in line
    assert "toy: 3/4 cells agree" in report.to_text()


def test_a_gap_within_the_seed_std_agrees(trees):
    a, b = trees
    set_cell(a / "toy", "ours", ACCURACY, "91.900 ± 1.000")  # 0.9 > 0.01 * 91, < std 1
    assert compare_trees(a, b, Tolerance(rtol=0.01, atol=0.0)).ok
    set_cell(a / "toy", "ours", ACCURACY, "92.100 ± 1.000")
    assert not compare_trees(a, b, Tolerance(rtol=0.01, atol=0.0)).ok


def test_dash_cells_agree_only_with_dashes(trees):
    a, b = trees
    for tree in trees:
        set_cell(tree / "toy", "base", LOSS, NOT_APPLICABLE)
    assert compare_trees(a, b).ok
    set_cell(b / "toy", "base", LOSS, "0.523 ± 0.025")
    report = compare_trees(a, b)
    assert not report.all_cells_agree
    [line] = [x for x in report.to_text().splitlines() if x.startswith("toy: cell")]
    assert f"row 'base', column '{LOSS}': A {NOT_APPLICABLE}, B 0.523 ± 0.025" in line


def test_a_jitter_within_tolerance_passes(tmp_path: Path):
    write_study(tmp_path / "a", scale=1.01)
    write_study(tmp_path / "b")
    report = compare_trees(tmp_path / "a", tmp_path / "b", Tolerance(rtol=0.05))
    assert report.ok
    assert report.studies[0].metrics.full
    assert (
        not compare_trees(tmp_path / "a", tmp_path / "b", Tolerance(rtol=0.001))
        .studies[0]
        .metrics.full
    )


def test_a_flipped_claim_is_flagged_and_exits_1(trees, capsys):
    a, b = trees

    def flip(checks):
        checks[0]["holds"] = not checks[0]["holds"]
        return checks

    edit_claims(a / "toy", flip)
    report = compare_trees(a, b)
    assert report.all_cells_agree and not report.all_claims_equal
    text = report.to_text()
    assert f"toy: claim '{BEATS}': holds A no, B yes; mean_difference A" in text
    assert "1/2 claim outcomes equal" in text
    assert main(["compare", str(a), str(b)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "all claim outcomes equal: no"


def test_a_missing_claim_is_reported(trees):
    a, b = trees
    edit_claims(a / "toy", lambda checks: checks[:1])
    report = compare_trees(a, b)
    assert not report.ok
    assert f"toy: claim '{LOWER}': missing in A" in report.to_text()
    assert report.studies[0].claims.agree == 1 and report.studies[0].claims.total == 2


def test_missing_studies_rows_and_files_are_differences(trees):
    a, b = trees
    write_study(b, "other")
    table = pd.read_csv(a / "toy" / "table.csv", dtype=str)
    write_csv(a / "toy" / "table.csv", table[table.method != "base"])
    (a / "toy" / "metrics.json").unlink()
    text = compare_trees(a, b).to_text()
    assert "other: study missing in A" in text
    assert "other: 0/4 cells agree, 0/2 claim outcomes equal" in text
    assert "toy: row 'base': missing in A" in text
    assert "toy: 2/4 cells agree" in text
    assert "toy: file metrics.json: missing in A" in text
    only_toy = compare_trees(a, b, studies=["toy"]).to_text()
    assert "other" not in only_toy


def test_metrics_differences_are_reported_but_do_not_decide(trees):
    a, b = trees
    metrics = read_json(a / "toy" / "metrics.json")
    metrics["ours"][LOSS]["per_seed"][1] = 9.0
    write_json(a / "toy" / "metrics.json", metrics)
    report = compare_trees(a, b)
    assert report.ok
    assert f"toy: metric ours/{LOSS}/per_seed[1]: A 9.0 vs B 0.32" in report.to_text()


def _git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=test", "-c", "user.email=test@example.org"]
    subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True)


def test_git_revision(tmp_path: Path, monkeypatch):
    repo = tmp_path / "repo"
    write_study(repo / "results")
    (repo / "results" / "index.html").write_text("<html></html>\n")  # not a study
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "results")
    monkeypatch.chdir(repo)
    assert compare_trees("results", "git:HEAD").ok
    set_cell(repo / "results" / "toy", "base", LOSS, "5.000 ± 0.100")
    report = compare_trees("results", "git:HEAD")
    assert not report.ok and report.b == "git:HEAD"
    assert f"toy: cell row 'base', column '{LOSS}'" in report.to_text()
    with pytest.raises(CompareError, match="git:nope: expected a revision"):
        compare_trees("results", "git:nope")


def test_cli_exit_codes_and_json(trees, tmp_path: Path, capsys):
    a, b = trees
    out = tmp_path / "report.json"
    assert main(["compare", str(a), str(b), "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["all_claim_outcomes_equal"] and document["studies"][0]["cells"]["total"] == 4
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "absent"), str(b)]) == 2
    assert f"{tmp_path / 'absent'}: no such folder" in capsys.readouterr().err
    (a / "toy" / "claims.json").write_text("{not json")
    assert main(["compare", str(a), str(b)]) == 2
    assert f"{a / 'toy' / 'claims.json'}: expected JSON" in capsys.readouterr().err
    set_cell(b / "toy", "ours", LOSS, "0.31")
    write_study(a)
    assert main(["compare", str(a), str(b)]) == 2
    assert "column 'loss': expected 'mean ± std', found '0.31'" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--rtol", "-1"]) == 2
