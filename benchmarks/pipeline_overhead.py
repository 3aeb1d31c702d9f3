"""How much our DAG adds to the tools' own floor.

Times an up-to-date `snakemake -n all` and `dvc status` on this repository and the same two
commands on a one-rule workflow (one Snakemake rule, one DVC stage) built in a temporary folder in
the same run, and prints each median with the ratio. The floor is the tools' start-up and
parsing cost; the ratio is what reprolab's parameter checks, includes and DAG add, and must stay
small as studies are added. Run `make all` (or pass --repo to an up-to-date copy) first; the
script says whether the repository was up to date.

    python benchmarks/pipeline_overhead.py [--repeat 5] [--repo .]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
ONE_RULE_SNAKEFILE = """
rule all:
    input: "out.txt"

rule make:
    output: "out.txt"
    log: "make.log"
    shell: "echo done > {output} 2> {log}"
"""
ONE_STAGE_DVC = """stages:
  make:
    cmd: echo done > out.txt
    outs:
      - out.txt
"""


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=True)


def median_seconds(cmd: list[str], cwd: Path, repeat: int) -> float:
    """Median wall time of `cmd` in `cwd` over `repeat` runs (after one warm-up)."""
    run(cmd, cwd)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run(cmd, cwd)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def one_rule_workflow(root: Path) -> Path:
    """A minimal up-to-date Snakemake + DVC project: the tools' own floor."""
    (root / "Snakefile").write_text(ONE_RULE_SNAKEFILE)
    (root / "dvc.yaml").write_text(ONE_STAGE_DVC)
    run(["git", "init", "-q"], root)
    run(["dvc", "init", "-q"], root)
    run(["dvc", "config", "core.analytics", "false"], root)
    run(["snakemake", "--cores", "1"], root)
    run(["dvc", "repro", "-q"], root)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    dry_run = run(["snakemake", "-n", "all"], args.repo).stdout
    up_to_date = "Nothing to be done" in dry_run
    with tempfile.TemporaryDirectory() as tmp:
        floor = one_rule_workflow(Path(tmp))
        rows = []
        for label, cmd in (
            ("snakemake -n all", ["snakemake", "-n", "all"]),
            ("dvc status", ["dvc", "status"]),
        ):
            ours = median_seconds(cmd, args.repo, args.repeat)
            base = median_seconds(cmd, floor, args.repeat)
            rows.append((label, ours, base))
    print(f"repository up to date: {up_to_date}; median of {args.repeat} runs each")
    print(f"{'command':<18}{'reprolab (s)':>14}{'one rule (s)':>14}{'ratio':>8}")
    for label, ours, base in rows:
        print(f"{label:<18}{ours:>14.2f}{base:>14.2f}{ours / base:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
