"""Where a workflow run's time went, per study: read from Snakemake's own log of the run.

Snakemake writes, for every job, a time-stamped block that opens it (`[<date>]`, then
`rule <name>:` or `localrule <name>:` and, a few lines on, `jobid: <n>`) and a time-stamped line
that closes it (`Finished jobid: <n> (Rule: <name>)`). A job's time is the difference of the two
stamps (one-second resolution); a job that failed or never finished has no closing line and is
left out. Each rule belongs to the study or preprocessing family whose id prefixes its name
(`normlift_run` → normlift; the longest id wins, so `norm_enforcement_run` is not normlift's);
the shared rules (`index`, `all`) belong to `workflow`.

Job time is summed per owner: with jobs in parallel the sums exceed the run's wall time, and
they say where the cores went. The mean time per job shows how much of a study is start-up
(importing torch and transformers costs seconds in every job). `reprolab run-times` prints the
table for a log, `make all` for the run it just made.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
OPENS = re.compile(r"^(?:local)?rule (\S+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
CLOSES = re.compile(r"^Finished jobid: (\d+) \(Rule: (\S+)\)$")
SHARED = "workflow"
"""The owner of rules that belong to no study or family (index, all)."""


@dataclass(frozen=True)
class JobTime:
    """One finished job: its rule, Snakemake's job id, when it started and finished."""

    rule: str
    jobid: int
    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


@dataclass(frozen=True)
class OwnerTime:
    """The jobs of one study or family: how many, their summed and their mean seconds."""

    owner: str
    jobs: int
    seconds: float

    @property
    def mean(self) -> float:
        return self.seconds / self.jobs


def _stamp(text: str) -> datetime:
    return datetime.strptime(text, "%a %b %d %H:%M:%S %Y")


def parse_log(lines: Iterable[str]) -> list[JobTime]:
    """The finished jobs of a Snakemake log, in the order they finished."""
    stamp: datetime | None = None
    opening: str | None = None
    started: dict[int, tuple[str, datetime]] = {}
    jobs = []
    for line in lines:
        line = line.rstrip("\n")
        if match := STAMP.match(line):
            stamp, opening = _stamp(match.group(1)), None
        elif (match := OPENS.match(line)) and stamp is not None:
            opening = match.group(1)
        elif (match := JOBID.match(line)) and opening is not None and stamp is not None:
            started[int(match.group(1))] = (opening, stamp)
            opening = None
        elif (match := CLOSES.match(line)) and stamp is not None:
            jobid = int(match.group(1))
            if jobid in started:
                rule, start = started.pop(jobid)
                jobs.append(JobTime(rule, jobid, start, stamp))
    return jobs


def owner_of(rule: str, owners: Sequence[str]) -> str:
    """The study or family whose id prefixes `rule` (the longest one), else SHARED."""
    matching = [o for o in owners if rule == o or rule.startswith(o + "_")]
    return max(matching, key=len) if matching else SHARED


def breakdown(jobs: Sequence[JobTime], owners: Sequence[str]) -> list[OwnerTime]:
    """Summed job time per owner, the slowest first (ties by name)."""
    totals: dict[str, list[float]] = {}
    for job in jobs:
        totals.setdefault(owner_of(job.rule, owners), []).append(job.seconds)
    rows = [OwnerTime(owner, len(times), sum(times)) for owner, times in totals.items()]
    return sorted(rows, key=lambda row: (-row.seconds, row.owner))


def format_breakdown(jobs: Sequence[JobTime], owners: Sequence[str]) -> str:
    """The table `reprolab run-times` prints: per owner its jobs, summed minutes, share of all
    job time and seconds per job; then the run's wall time (first start to last finish)."""
    if not jobs:
        return "no finished job in the log"
    rows = breakdown(jobs, owners)
    total = sum(row.seconds for row in rows)
    wall = (max(j.end for j in jobs) - min(j.start for j in jobs)).total_seconds()
    lines = [f"{'owner':<20} {'jobs':>5} {'minutes':>8} {'share':>6} {'s/job':>6}"]
    for row in rows:
        share = row.seconds / total if total else 0.0
        lines.append(
            f"{row.owner:<20} {row.jobs:>5} {row.seconds / 60:>8.1f} {share:>6.1%} {row.mean:>6.1f}"
        )
    lines.append(
        f"{len(jobs)} jobs, {total / 60:.1f} job-minutes in {wall / 60:.1f} minutes of wall time"
    )
    return "\n".join(lines)


def latest_log(root: str | Path = ".") -> Path:
    """The newest Snakemake log of the workflow at `root` (.snakemake/log/)."""
    logs = sorted(Path(root, ".snakemake", "log").glob("*.snakemake.log"))
    if not logs:
        raise ValueError(f"{Path(root, '.snakemake', 'log')}: no Snakemake log (run a workflow)")
    return logs[-1]
