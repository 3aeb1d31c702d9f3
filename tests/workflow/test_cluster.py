"""The cluster profile, run for real: `snakemake --profile slurm` on a one-node SLURM cluster
(tests/workflow/slurm_cluster.py) at `ci` scale, over a CPU study, a GPU study and the index,
against the local ci run; and its paper-scale plan.
`make cluster-check` runs this file alone."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
import yte

from tests.conftest import BIN, copy_run, run, touch_paper_inputs
from tests.workflow.rules_api import paper_scale_rules
from tests.workflow.slurm_cluster import LocalSlurm, local_slurm

pytestmark = pytest.mark.integration
CI = ["--config", "scale=ci"]
ON_SLURM = ("pem", "ntm")
"""What the cluster runs again: pem (CPU jobs only), ntm (GPU jobs) and the index that reads
them; the two studies with the fewest ci jobs of their kind (CI's 30 minutes: vngct with the
instr family took four minutes here)."""
CANCELLED_RULE = "ntm_run"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    with local_slurm(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


def site_environment(cluster: LocalSlurm) -> dict[str, str]:
    """What a site sets before `snakemake --profile slurm` (README), for the test cluster."""
    return {
        **cluster.env,
        "REPROLAB_SLURM_CPU_PARTITION": cluster.shape.cpu_partition,
        "REPROLAB_SLURM_GPU_PARTITION": cluster.shape.gpu_partition,
    }


def slurm_command(*targets: str) -> list[str]:
    """The profile as shipped at ci scale, with what a cluster without accounting storage needs:
    job states from squeue, no account, and a short wait before the first status check; status
    is polled every second (Snakemake's default is 10 s, which on a DAG of short ci jobs is
    mostly waiting)."""
    return [
        str(BIN / "snakemake"),
        "--profile",
        "slurm",
        *CI,
        "--slurm-status-command",
        "squeue",
        "--slurm-no-account",
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--seconds-between-status-checks",
        "1",
        *targets,
    ]


def produced(repo: Path) -> dict[str, str]:
    """sha256 of every file under results/ and data/."""
    files = sorted(p for folder in ("results", "data") for p in (repo / folder).rglob("*"))
    return {
        str(f.relative_to(repo)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in files
        if f.is_file()
    }


def running_jobs(cluster: LocalSlurm, rule: str) -> list[str]:
    """Ids of the running SLURM jobs of `rule` (the executor names the rule in the comment)."""
    lines = cluster.run("squeue", "--noheader", "--states=RUNNING", "--format=%i %k").splitlines()
    jobs = []
    for line in lines:
        job, _, comment = line.strip().partition(" ")
        if comment == f"rule_{rule}" or comment.startswith(f"rule_{rule}_wildcards_"):
            jobs.append(job)
    return jobs


def slurm_jobs(cluster: LocalSlurm) -> list[dict[str, str]]:
    """Every job the cluster ran or runs (MinJobAge keeps them), as `scontrol` shows them."""
    lines = cluster.run("scontrol", "show", "job", "--oneliner").splitlines()
    return [dict(f.split("=", 1) for f in line.split() if "=" in f) for line in lines if line]


def settled_state(cluster: LocalSlurm, job: str) -> str:
    """The state `job` ends in (CANCELLED, COMPLETED, FAILED, ...), waited for up to a minute."""
    deadline = time.monotonic() + 60
    while True:
        state = cluster.run("squeue", "--noheader", f"--jobs={job}", "--states=all", "-o%T")
        if state.strip() not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
            return state.strip()
        if time.monotonic() > deadline:
            raise AssertionError(f"SLURM job {job} still {state.strip()} after a minute")
        time.sleep(0.3)


def cancel_one_running(cluster: LocalSlurm, rule: str, proc: subprocess.Popen) -> str:
    """scancel one running job of `rule` and return its id once SLURM reports it cancelled (a
    job that completed before the scancel reached it does not count: the next one is tried)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        for job in running_jobs(cluster, rule)[:1]:
            subprocess.run(["scancel", job], env={**os.environ, **cluster.env}, check=False)
            if settled_state(cluster, job) == "CANCELLED":
                return job
        time.sleep(0.3)
    raise AssertionError(f"no running {rule} job could be cancelled before the workflow ended")


def test_profile_on_slurm_matches_the_local_run_and_survives_scancel(
    slurm: LocalSlurm, ci_run: Path, tmp_path: Path
):
    cluster_repo = copy_run(ci_run, tmp_path / "cluster")
    run(["snakemake", "--delete-all-output", *CI, "--", *ON_SLURM], cluster_repo)
    (cluster_repo / "results/index.html").unlink()
    planned = run(["snakemake", "-n", *CI, "--", "all"], cluster_repo).stdout
    assert {rule.split("_")[0] for rule in re.findall(r"^rule (\w+):", planned, re.M)} == {
        "pem",
        "ntm",
        "index",
        "all",
    }
    log = tmp_path / "snakemake-slurm.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            slurm_command("all"),
            cwd=cluster_repo,
            env={
                **os.environ,
                **site_environment(slurm),
                "PATH": f"{BIN}{os.pathsep}{slurm.env['PATH']}",
                "HF_HUB_OFFLINE": "1",
            },
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        cancelled = cancel_one_running(slurm, CANCELLED_RULE, proc)
        returncode = proc.wait(timeout=1500)
    output = log.read_text()
    assert returncode == 0, output[-6000:]
    assert cancelled in output and "CANCELLED" in output, output[-6000:]

    jobs = slurm_jobs(slurm)
    assert {job["Partition"] for job in jobs} == {
        slurm.shape.cpu_partition,
        slurm.shape.gpu_partition,
    }
    for job in jobs:
        asks_gpu = "gpu" in job.get("TresPerJob", "") + job.get("TresPerNode", "")
        assert asks_gpu == (job["Partition"] == slurm.shape.gpu_partition), job

    assert produced(cluster_repo) == produced(ci_run)


def planned_jobs(dry_run: str) -> list[tuple[str, bool, dict[str, str]]]:
    """(rule, has outputs, resources) of every job a dry run prints."""
    jobs = []
    for block in re.split(r"\n(?=rule \w+:\n)", dry_run):
        head = re.match(r"rule (\w+):\n", block)
        if head is None:
            continue
        listed = re.search(r"^ +resources: (.*)$", block, re.M)
        items = listed.group(1).split(", ") if listed else []
        resources = dict(item.split("=", 1) for item in items)
        jobs.append((head.group(1), bool(re.search(r"^ +output: ", block, re.M)), resources))
    return jobs


def test_paper_dry_run_sizes_every_job_and_sends_only_gpu_jobs_to_the_gpu_partition(
    repo_copy: Path,
):
    touch_paper_inputs(repo_copy)
    site = {"REPROLAB_SLURM_CPU_PARTITION": "cpuq", "REPROLAB_SLURM_GPU_PARTITION": "gpuq"}
    result = run(["snakemake", "--profile", "slurm", "-n", "all"], repo_copy, extra_env=site)
    assert "Paper-scale data missing" not in result.stderr
    jobs = planned_jobs(result.stdout)
    studies = yaml.safe_load((repo_copy / "params.yaml").read_text())["studies"]
    planned = {rule for rule, _, _ in jobs}
    assert {f"{study}_summarize" for study in studies} <= planned
    for rule in ("ndfa_split", "wsi_tile", "wsi_features", "ssg_train", "vngct_run", "index"):
        assert rule in planned
    rules, gpu_rules = paper_scale_rules(), set()
    for rule, has_outputs, resources in jobs:
        if not has_outputs or rules[rule]["local"]:  # aliases and local rules stay local
            continue
        assert "runtime" in resources and resources["mem_mb"] != "<TBD>", f"{rule}: {resources}"
        asks_gpu = int(resources.get("gpu", 0)) > 0
        expected = "gpuq" if asks_gpu else "cpuq"
        assert resources["slurm_partition"] == expected, f"{rule}: {resources}"
        if asks_gpu:
            gpu_rules.add(rule)
    asking = {name for name, rule in rules.items() if "gpu" in rule["resources"]}
    assert gpu_rules <= asking
    # the profile's GPU list is every rule that asks for a GPU, planned here or not
    profile = yte.process_yaml((repo_copy / "slurm/config.yaml").read_text(), require_use_yte=True)
    assert set(profile["set-resources"]) == asking
