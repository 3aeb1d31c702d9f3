"""The workflow itself, run for real at `ci` scale in a fresh copy of the repository."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from reprolab.core.layout import CONTRACT_FILES, known_studies
from tests.conftest import BIN, ROOT, copy_run, run
from tests.workflow.commit_scope import (
    head_commit,
    last_commit_changes,
    stage_specs,
    touched_stages,
    with_upstream,
)

pytestmark = pytest.mark.integration
CI = ["--config", "scale=ci"]
STUDIES = tuple(yaml.safe_load((ROOT / "params.yaml").read_text())["studies"])
RULES = (
    "ndfa_train",
    "wsi_tile",
    "wsi_features",
    "ssg_train",
    "video_frames",
    "visual_queries_run",
    "instr_check",
    "vngct_run",
    "bilevel_ht_run",
    "icl_manifold_eval",
    "pem_run",
)
RERUN_ELSEWHERE = ("ndfa", "pem", "ntm")
"""Studies whose ci run is repeated and compared byte for byte by another test: the kill below
(ndfa) and the SLURM run (pem and ntm, test_cluster.py)."""
FORCED_AT_MOST = 3
"""How many studies the forced rerun repeats (CI's 30 minutes: all of them took 6 minutes of it
at fourteen studies); `REPROLAB_FORCED_STUDIES=all` (or a list of ids) asks for others."""
HASHED = (
    "table.csv",
    "table.md",
    "table.tex",
    "claims.json",
    "metrics.json",
    "curves.csv",
    "report.ipynb",
    "report.html",
)


def hashes(repo: Path) -> dict[str, str]:
    """sha256 of every table, claims, metrics, report and run file of the studies, of every
    file the wsi, video and instr families made (slides, truth, coords, QC images, features,
    mp4, annotations, clips, probes, process lists, stream records and images) and of the
    visual_queries item files and vngct's aligned models."""
    files = []
    for study in STUDIES:
        root = repo / "results" / study
        files += [root / name for name in HASHED] + sorted((root / "runs").rglob("*.*"))
    files += sorted((repo / "data" / "ndfa").rglob("*.h5"))
    for family in ("wsi", "video", "instr"):
        files += sorted(p for p in (repo / "data").glob(f"**/{family}/**/*") if p.is_file())
    files += sorted((repo / "data" / "visual_queries").rglob("*.*"))
    files += sorted((repo / "data" / "vngct").rglob("*.*"))
    files = [f for f in files if f.is_file()]
    return {str(f.relative_to(repo)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def forced_studies(spec: dict[str, dict], changed: list[str], commit: str) -> list[str]:
    """The studies the forced ci rerun repeats: those the last commit touched (their stage or one
    upstream of it, as dvc.yaml's deps say), less those another test reruns. When more than
    `FORCED_AT_MOST` were touched (a change of shared code touches all), a window of them that
    starts where the commit's id points, so that successive commits repeat every study in turn;
    when none was, one study picked the same way."""
    candidates = [study for study in STUDIES if study not in RERUN_ELSEWHERE]
    touched = set(touched_stages(spec, changed))
    chosen = [study for study in candidates if with_upstream(spec, [study]) & touched]
    pool, size = (chosen, FORCED_AT_MOST) if chosen else (candidates, 1)
    if len(pool) <= size:
        return pool
    start = int(commit[:8], 16) % len(pool)
    return [pool[(start + step) % len(pool)] for step in range(size)]


def test_forced_rerun_follows_the_commit():
    spec, commit = stage_specs(ROOT / "dvc.yaml"), "0" * 40
    assert forced_studies(spec, ["src/reprolab/studies/trpr/run.py"], commit) == ["trpr"]
    # the wsi family feeds ssg and nicer; ndfa is rerun by the kill test instead
    assert forced_studies(
        spec, ["workflow/rules/wsi.smk", "src/reprolab/studies/ndfa"], commit
    ) == [
        "ssg",
        "nicer",
    ]
    everything = forced_studies(spec, ["requirements.lock"], commit)
    later = forced_studies(spec, ["requirements.lock"], "00000001" + "0" * 32)
    assert len(everything) == len(later) == FORCED_AT_MOST and everything != later
    assert not set(everything) & set(RERUN_ELSEWHERE)
    assert len(forced_studies(spec, ["README.md"], commit)) == 1


def test_local_dry_run_plans_every_job_rule(repo_copy: Path):
    """(The cluster profile's paper-scale dry run: tests/workflow/test_cluster.py.)"""
    local = run(["snakemake", "-n", "all"], repo_copy)
    for rule in RULES:
        assert rule in local.stdout


@pytest.mark.parametrize(
    "override, expected",
    [
        (["scale=huge"], "scale"),
        (["studies=[ndfa,nope]"], f"known ids are {known_studies()}"),
        (["threads=0"], "threads"),
    ],
)
def test_bad_config_stops_before_any_job(repo_copy: Path, override: list[str], expected: str):
    committed = sorted((repo_copy / "results").rglob("*"))  # the results files git carries
    result = run(
        ["snakemake", "--cores", "1", "all", "--config", *override], repo_copy, check=False
    )
    assert result.returncode != 0
    assert expected in result.stdout + result.stderr
    assert sorted((repo_copy / "results").rglob("*")) == committed
    assert not (repo_copy / "data").exists() and not (repo_copy / "logs").exists()


@pytest.mark.parametrize(
    "section, key, value, expected",
    [
        ("train", "lr", -0.001, "key 'ndfa.train.lr'"),
        ("surrogate", "typo", 1, "'typo' was unexpected"),
    ],
)
def test_bad_params_file_names_the_key(repo_copy: Path, section, key, value, expected):
    params = yaml.safe_load((repo_copy / "params.yaml").read_text())
    params["ndfa"][section][key] = value
    (repo_copy / "params.yaml").write_text(yaml.safe_dump(params))
    result = run(["snakemake", "-n", "all"], repo_copy, check=False)
    assert result.returncode != 0
    assert expected in result.stdout + result.stderr


def test_ci_workflow_is_byte_identical_and_survives_a_kill(ci_run: Path, tmp_path: Path):
    repo_copy = copy_run(ci_run, tmp_path / "repo")
    first = hashes(repo_copy)
    for study in STUDIES:
        for name in CONTRACT_FILES:
            assert (repo_copy / "results" / study / name).is_file(), f"{study}/{name}"
        assert study in (repo_copy / "results/index.html").read_text()
    assert any((repo_copy / "data/wsi/synthetic/features").glob("*.h5"))
    assert (repo_copy / "data/video/sprites/frames/clips.h5").is_file()
    check_snakemake_report(repo_copy, STUDIES)
    # Forced again and compared byte for byte with `first`: the studies the last commit touched
    # (at most FORCED_AT_MOST); ndfa is rerun below, pem and ntm on SLURM (test_cluster.py).
    asked = os.environ.get("REPROLAB_FORCED_STUDIES", "").split()
    if asked == ["all"]:
        forced = [study for study in STUDIES if study not in RERUN_ELSEWHERE]
    else:
        changed = last_commit_changes(ROOT)
        forced = asked or forced_studies(stage_specs(ROOT / "dvc.yaml"), changed, head_commit(ROOT))
    print(f"forced again: {forced}")
    run(["snakemake", "--cores", "2", "--forceall", *forced, *CI], repo_copy)
    assert hashes(repo_copy) == first

    # Kill a forced rerun of one study while its training jobs are writing, then rerun the whole
    # workflow: no partial outputs remain and only what the kill touched runs again (one study,
    # not a third pass over all of them: CI's 30 minutes).
    started = time.time()
    proc = subprocess.Popen(
        [str(BIN / "snakemake"), "--cores", "2", "ndfa", "--forceall", *CI],
        cwd=repo_copy,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    runs = repo_copy / "results/ndfa/runs"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        finished = [p for p in runs.rglob("metrics.json") if p.stat().st_mtime > started]
        if len(finished) >= 3:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for metrics in runs.rglob("metrics.json"):
        assert metrics.read_text().endswith("}\n"), metrics
        assert (metrics.parent / "curves.h5").is_file(), metrics
    # SIGKILL (power loss, scheduler kill) leaves Snakemake's lock behind: unlock, then rerun.
    run(["snakemake", "--unlock", *CI], repo_copy)
    run(["snakemake", "--cores", "2", "all", *CI], repo_copy)
    # A split deleted by the kill is not rebuilt when every run that reads it is complete.
    results = {path: digest for path, digest in first.items() if path.startswith("results/")}
    assert {p: d for p, d in hashes(repo_copy).items() if p.startswith("results/")} == results


def report_data(html: str, name: str) -> dict:
    """An object Snakemake's self-contained report embeds as one line `var <name> = {...};`
    (`categories`: category -> subcategory -> paths; `results`: path -> labels, caption, data)."""
    match = re.search(rf"^\s*var {name} = (\{{.*\}});\s*$", html, re.MULTILINE)
    assert match, f"no `var {name}` in the report"
    return json.loads(match.group(1))


def check_snakemake_report(repo: Path, studies: tuple[str, ...]) -> None:
    """`snakemake --report` holds the workflow description and, per study, its table, curves
    and rendered report, each labelled, captioned and embedded byte for byte."""
    run(["snakemake", "--report", "report.html", "all", *CI], repo)
    html = (repo / "report.html").read_text()
    assert "regenerates, from raw data and deterministically" in html
    categories, results = report_data(html, "categories"), report_data(html, "results")
    entries = {"table": "table.csv", "curves": "curves.csv", "report": "report.html"}
    for study in studies:
        assert categories[study] == {
            kind: [f"results/{study}/{name}"] for kind, name in entries.items()
        }
        for kind, name in entries.items():
            entry = results[f"results/{study}/{name}"]
            assert entry["labels"] == {"study": study, "kind": kind}
            assert entry["caption"].strip()
            embedded = base64.b64decode(entry["data_uri"].split("base64,", 1)[1])
            assert embedded == (repo / "results" / study / name).read_bytes()
