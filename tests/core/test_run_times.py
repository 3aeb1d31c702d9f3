"""Reading a run's time per study from Snakemake's log."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprolab.cli import main
from reprolab.core.run_times import breakdown, format_breakdown, latest_log, owner_of, parse_log

LOG = """\
Building DAG of jobs...
[Sun Dec  6 23:24:39 2026]
localrule normlift_scene:
    output: data/normlift/scenes/seed1.h5
    jobid: 7
    wildcards: seed=1
Shell command: None
Select jobs to execute...

[Sun Dec  6 23:24:40 2026]
rule norm_enforcement_run:
    output: results/norm_enforcement/runs/seed0/metrics.json
    jobid: 3
Select jobs to execute...
[Sun Dec  6 23:24:49 2026]
Finished jobid: 7 (Rule: normlift_scene)
1 of 4 steps (25%) done
[Sun Dec  6 23:24:50 2026]
localrule wsi_tile:
    jobid: 12
[Sun Dec  6 23:25:10 2026]
Finished jobid: 3 (Rule: norm_enforcement_run)
[Sun Dec  6 23:25:12 2026]
Finished jobid: 12 (Rule: wsi_tile)
[Sun Dec  6 23:25:12 2026]
localrule index:
    jobid: 1
[Sun Dec  6 23:25:13 2026]
Error in rule index:
    jobid: 1
"""
OWNERS = ["normlift", "norm_enforcement", "wsi"]


def test_each_finished_job_is_timed_from_its_opening_to_its_closing_stamp():
    jobs = parse_log(LOG.splitlines(keepends=True))
    assert [(j.rule, j.jobid, j.seconds) for j in jobs] == [
        ("normlift_scene", 7, 10.0),
        ("norm_enforcement_run", 3, 30.0),
        ("wsi_tile", 12, 22.0),
    ]  # the failed index job never finished


def test_a_rule_belongs_to_the_longest_id_that_prefixes_it():
    assert owner_of("norm_enforcement_run", OWNERS) == "norm_enforcement"
    assert owner_of("normlift_scene", OWNERS) == "normlift"
    assert owner_of("wsi", OWNERS) == "wsi"
    assert owner_of("index", OWNERS) == "workflow"
    assert owner_of("normliftx_run", OWNERS) == "workflow"


def test_the_breakdown_lists_the_slowest_owner_first_with_the_wall_time():
    jobs = parse_log(LOG.splitlines())
    rows = breakdown(jobs, OWNERS)
    assert [(r.owner, r.jobs, r.seconds) for r in rows] == [
        ("norm_enforcement", 1, 30.0),
        ("wsi", 1, 22.0),
        ("normlift", 1, 10.0),
    ]
    text = format_breakdown(jobs, OWNERS)
    assert text.splitlines()[1].startswith("norm_enforcement")
    assert text.splitlines()[-1] == "3 jobs, 1.0 job-minutes in 0.6 minutes of wall time"


def test_the_command_reads_the_newest_log(tmp_path: Path, capsys):
    logs = tmp_path / ".snakemake" / "log"
    logs.mkdir(parents=True)
    (logs / "2026-12-06T100000.000000.snakemake.log").write_text("")
    (logs / "2026-12-06T230000.000000.snakemake.log").write_text(LOG)
    assert latest_log(tmp_path).name.startswith("2026-12-06T23")
    assert main(["run-times", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "norm_enforcement" in out and "3 jobs" in out


def test_a_workflow_without_a_log_is_named(tmp_path: Path):
    with pytest.raises(ValueError, match="no Snakemake log"):
        latest_log(tmp_path)
