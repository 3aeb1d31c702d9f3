"""DVC drives the same workflow: repro, status, checkout, a remote round trip, the committed
smoke-scale lock reproduced (bytes where the kernel configuration matches, values elsewhere)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from reprolab.core.layout import load_papers
from reprolab.core.provenance import kernel_signature
from tests.conftest import ROOT, run
from tests.workflow.commit_scope import (
    last_commit_changes,
    stage_specs,
    touched_stages,
    with_upstream,
)

pytestmark = pytest.mark.integration
DETERMINISTIC = {
    "ndfa": ("results/ndfa/runs", "data/ndfa"),
    "wsi": ("data/raw/wsi", "data/wsi"),
    "video": ("data/raw/video", "data/video"),
    "ssg": ("results/ssg/runs",),
    "visual_queries": ("results/visual_queries/runs", "data/visual_queries"),
    "instr": ("data/raw/instr", "data/instr"),
    "vngct": ("results/vngct/runs", "data/vngct"),
    "bilevel_ht": ("results/bilevel_ht/runs",),
    "icl_manifold": ("results/icl_manifold/runs",),
    "pem": ("results/pem/runs",),
    "hiccr": ("results/hiccr/runs", "data/hiccr"),
}
SUMMARIES = ("table.csv", "table.md", "table.tex", "claims.json", "metrics.json", "curves.csv")
SMOKE_MINUTES = load_papers().smoke_minutes
"""Smoke `dvc repro` time of each stage on 2 cores, upstream stages excluded, as
src/reprolab/papers.yaml records it (measured at the last lock refresh)."""
CI_REPRO_MINUTES = 3.0
"""CI's budget for reproducing the committed lock; `make repro-check` reproduces every stage."""
CI_DVC_STAGES = ("pem",)
"""The stages CI reproduces at ci scale to test DVC's seams (repro, checkout, push, pull, metrics
and plots): pem, the quickest study without an upstream stage, whose metrics the test diffs and
whose outputs it deletes and restores with `dvc checkout` (CI's 30 minutes)."""
REPRO_SLACK = 4.0
"""How many times its planned smoke minutes (papers.yaml, measured on an idle machine) a
reproduction may take before the test gives up: a loaded machine runs a full repro at well
over twice the planned time (61 min and still going for 35 planned minutes)."""


def out_hashes(lock_file: Path) -> dict[str, str]:
    """md5 of each output and metric of every stage recorded in a dvc.lock."""
    stages = yaml.safe_load(lock_file.read_text())["stages"].values()
    return {out["path"]: out["md5"] for stage in stages for out in stage.get("outs", [])}


def planned_minutes(stages: Iterable[str]) -> float:
    """Smoke minutes of `stages` as papers.yaml records them (an unmeasured stage counts 60)."""
    return sum(SMOKE_MINUTES.get(s, 60.0) for s in stages)


def ci_repro_stages(spec: dict[str, dict], changed: list[str]) -> tuple[list[str], str]:
    """The stages CI reproduces, and why: those the commit touched (upstream included), cheapest
    first, while they fit in `CI_REPRO_MINUTES`; when none was touched or none fits, the cheapest
    stage, so every CI run reproduces something."""
    touched = touched_stages(spec, changed)
    chosen: list[str] = []
    for stage in sorted(touched, key=lambda s: (SMOKE_MINUTES.get(s, 60.0), s)):
        trial = with_upstream(spec, [*chosen, stage])
        if planned_minutes(trial) <= CI_REPRO_MINUTES:
            chosen.append(stage)
    skipped = sorted(set(touched) - with_upstream(spec, chosen))
    if not chosen:
        chosen = [min(DETERMINISTIC, key=lambda s: SMOKE_MINUTES.get(s, 60.0))]
    why = f"touched by the last commit: {sorted(touched) or 'none'}; over the budget: {skipped}"
    return chosen, why


def committed_kernels(repo: Path, study: str) -> dict | None:
    """The kernel signature recorded in the committed provenance.json of a study."""
    shown = subprocess.run(
        ["git", "show", f"HEAD:results/{study}/provenance.json"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    return kernel_signature(json.loads(shown.stdout)["kernels"]) if shown.returncode == 0 else None


def test_repro_at_ci_scale_then_push_clone_pull_is_clean(repo_copy: Path, tmp_path: Path):
    """DVC's seams on the stages of `CI_DVC_STAGES`; that every rule runs at ci scale is
    test_workflow's job, and every stage is reproduced by `make repro-check`."""
    params = yaml.safe_load((repo_copy / "params.yaml").read_text())
    params["scale"] = "ci"
    (repo_copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    stages = list(CI_DVC_STAGES)
    run(["dvc", "repro", *stages], repo_copy, timeout=1800)
    assert "up to date" in run(["dvc", "status", *stages], repo_copy).stdout
    assert "Nothing to be done" in run(["snakemake", "-n", *stages], repo_copy).stdout

    # The seam: dvc checkout restores outputs with new file times, in no particular order, and
    # Snakemake reruns a job whose input is newer than its output; `--touch` after DVC has
    # verified every output re-orders the times along the DAG (what `make pull` does).
    run(["rm", "-rf", "results/pem/runs", "results/pem/report.html", "data/pem"], repo_copy)
    run(["dvc", "checkout", *stages], repo_copy)
    run(["snakemake", "--touch", "--cores", "1", *stages], repo_copy)
    assert "Nothing to be done" in run(["snakemake", "-n", *stages], repo_copy).stdout

    # Push to a remote, commit, clone, pull: the clone is complete and up to date.
    remote = tmp_path / "remote"
    run(["dvc", "remote", "add", "-d", "local", str(remote)], repo_copy)
    run(["dvc", "push", *stages], repo_copy)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    run([*git, "add", "-A"], repo_copy)
    run([*git, "commit", "-qm", "ci-scale run"], repo_copy)
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(repo_copy), str(clone)], tmp_path)
    run(["dvc", "pull", *stages], clone)
    run(["snakemake", "--touch", "--cores", "1", *stages], clone)
    assert "up to date" in run(["dvc", "status", *stages], clone).stdout
    assert "Nothing to be done" in run(["snakemake", "-n", *stages], clone).stdout
    assert (clone / "results/pem/report.html").is_file()

    # Metrics and plots are committed: readable, diffable and drawable in the clone.
    shown = json.loads(run(["dvc", "metrics", "show", "--json"], clone).stdout)
    assert "results/pem/metrics.json" in json.dumps(shown)
    diff = run(["dvc", "metrics", "diff", "HEAD~1", "--json"], clone).stdout
    assert "results/pem/metrics.json" in diff
    run(["dvc", "plots", "show", "-o", "plots"], clone)
    page = (clone / "plots/index.html").read_text()
    for study in params["studies"]:
        assert f"{study}_curves" in page, study


def test_ci_repro_choice_follows_the_commit_and_the_budget():
    spec = stage_specs(ROOT / "dvc.yaml")
    chosen, _ = ci_repro_stages(spec, ["src/reprolab/studies/bilevel_ht/optim.py"])
    assert chosen == ["bilevel_ht"]
    chosen, why = ci_repro_stages(spec, ["src/reprolab/studies/visual_queries/items.py"])
    assert "visual_queries" not in chosen and "visual_queries" in why
    chosen, _ = ci_repro_stages(spec, ["README.md"])
    assert len(chosen) == 1
    chosen, _ = ci_repro_stages(spec, ["requirements.lock"])
    assert len(chosen) > 1 and planned_minutes(with_upstream(spec, chosen)) <= CI_REPRO_MINUTES


def test_smoke_repro_reproduces_the_committed_lock(repo_copy: Path):
    """`REPROLAB_REPRO_STAGES` (`all`: every stage; names: those stages) overrides CI's choice.

    Bytes are compared where the committed provenance records the kernel configuration this
    machine runs with; elsewhere `reprolab compare` must find the values within tolerance and
    every claim outcome equal."""
    spec = stage_specs(repo_copy / "dvc.yaml")
    asked = os.environ.get("REPROLAB_REPRO_STAGES", "").split()
    if asked == ["all"]:
        targets, why = list(spec), "REPROLAB_REPRO_STAGES=all"
    elif asked:
        targets, why = asked, "REPROLAB_REPRO_STAGES"
    else:
        targets, why = ci_repro_stages(spec, last_commit_changes(ROOT))
    print(f"reproducing {targets} ({why})")
    committed = out_hashes(repo_copy / "dvc.lock")
    committed_kernel = {s: committed_kernels(repo_copy, s) for s in spec}
    reproduced = sorted(with_upstream(spec, targets))
    timeout = max(600, int(60 * REPRO_SLACK * planned_minutes(reproduced)))
    run(["dvc", "repro", *targets], repo_copy, timeout=timeout)
    fresh = out_hashes(repo_copy / "dvc.lock")
    for stage in reproduced:
        paths = list(DETERMINISTIC.get(stage, ()))
        provenance = repo_copy / f"results/{stage}/provenance.json"
        if provenance.is_file():
            kernels = kernel_signature(json.loads(provenance.read_text())["kernels"])
            if kernels != committed_kernel[stage]:
                print(f"{stage}: kernel configuration differs from the lock's, comparing values")
                run(["reprolab", "compare", "results", "git:HEAD", "--studies", stage], repo_copy)
                continue
            paths += [f"results/{stage}/{name}" for name in SUMMARIES]
        print(f"{stage}: comparing bytes of {paths}")
        for path in paths:
            assert fresh[path] == committed[path], f"{path}: hash differs from the committed lock"
    assert "up to date" in run(["dvc", "status", *targets], repo_copy).stdout
