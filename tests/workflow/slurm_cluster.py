"""A one-node SLURM cluster on localhost for the cluster tests: Debian's slurm-wlm and munge,
installed with apt-get when missing, configured under a temporary folder, started, and stopped
again (exactly the daemons this module started, found by their pid files)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("munged", "slurmctld", "slurmd")


@dataclass(frozen=True)
class ClusterShape:
    """What the test cluster offers: one node, a CPU and a GPU partition on it, GPUs with no
    device behind them (SLURM only hands out their indices), and the memory it declares."""

    cpus: int = 2
    gpus: int = 2
    mem_mb: int = 12000
    cpu_partition: str = "testcpu"
    gpu_partition: str = "testgpu"


def install_slurm() -> None:
    """apt-get slurm-wlm and munge where slurmctld is missing (CI machines start bare)."""
    if shutil.which("slurmctld") and shutil.which("munged"):
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, capture_output=True)
    subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES],
        check=True,
        env=env,
        capture_output=True,
    )


def slurm_conf(root: Path, shape: ClusterShape) -> str:
    """slurm.conf for one node named after this host. Measured choices: proctrack/linuxproc and
    task/none (no cgroups in a container), no accounting storage (Snakemake then asks squeue,
    and MinJobAge keeps finished jobs visible to it), and a fake GPU (gres.conf)."""
    host = socket.gethostname().split(".")[0]
    return "\n".join(
        [
            "ClusterName=reprolab-test",
            f"SlurmctldHost={host}(127.0.0.1)",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={root / 'munge.socket'}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}",
            f"SlurmctldLogFile={root / 'slurmctld.log'}",
            f"SlurmdLogFile={root / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "GresTypes=gpu",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MinJobAge=86400",
            "ReturnToService=2",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            f"NodeName={host} NodeAddr=127.0.0.1 CPUs={shape.cpus} "
            f"RealMemory={shape.mem_mb} Gres=gpu:{shape.gpus} State=UNKNOWN",
            f"PartitionName={shape.cpu_partition} Nodes={host} Default=YES MaxTime=INFINITE "
            "State=UP",
            f"PartitionName={shape.gpu_partition} Nodes={host} MaxTime=INFINITE State=UP",
            "",
        ]
    )


FAKE_GPU_FILES = ("/dev/null", "/dev/zero")
"""Device files behind the fake GPUs: SLURM 22.05 drops a GPU that has none."""


def gres_conf(shape: ClusterShape) -> str:
    """gres.conf: the node's fake GPUs, one device file each, no autodetection."""
    if shape.gpus > len(FAKE_GPU_FILES):
        raise ValueError(f"at most {len(FAKE_GPU_FILES)} fake GPUs, not {shape.gpus}")
    lines = [f"Name=gpu File={path}" for path in FAKE_GPU_FILES[: shape.gpus]]
    return "\n".join(["AutoDetect=off", *lines, ""])


def _wait_until(condition, what: str, timeout: float = 60.0) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise TimeoutError(f"the test SLURM cluster: {what} after {timeout:.0f} s")


@dataclass
class LocalSlurm:
    """A running one-node cluster: `env` holds SLURM_CONF for its clients."""

    root: Path
    shape: ClusterShape

    @property
    def env(self) -> dict[str, str]:
        """The environment of this cluster's clients: SLURM_CONF, and PATH led by an `srun`
        that sets it again (the Snakemake job step, slurm-jobstep 0.6, drops every SLURM_
        variable but the job's identity before its nested srun, so that srun would find no
        configuration outside /etc/slurm)."""
        return {
            "SLURM_CONF": str(self.root / "slurm.conf"),
            "PATH": f"{self.root / 'bin'}{os.pathsep}{os.environ['PATH']}",
        }

    def run(self, *cmd: str) -> str:
        """A SLURM client command (squeue, scancel, ...) against this cluster; its stdout."""
        return subprocess.run(
            cmd, env={**os.environ, **self.env}, capture_output=True, text=True, check=True
        ).stdout

    def start(self) -> None:
        """Write the configuration and start munged, slurmctld and slurmd; return when the node
        takes jobs."""
        for folder in ("state", "spool"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        (self.root / "slurm.conf").write_text(slurm_conf(self.root, self.shape))
        (self.root / "gres.conf").write_text(gres_conf(self.shape))
        srun = self.root / "bin" / "srun"
        srun.parent.mkdir(exist_ok=True)
        srun.write_text(
            f'#!/bin/sh\nSLURM_CONF={self.root / "slurm.conf"} exec {shutil.which("srun")} "$@"\n'
        )
        srun.chmod(0o755)
        key = self.root / "munge.key"
        subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True)
        subprocess.run(
            [
                "munged",
                "--force",
                f"--socket={self.root / 'munge.socket'}",
                f"--key-file={key}",
                f"--pid-file={self.root / 'munged.pid'}",
                f"--log-file={self.root / 'munged.log'}",
                f"--seed-file={self.root / 'munged.seed'}",
            ],
            check=True,
        )
        conf = str(self.root / "slurm.conf")
        env = {**os.environ, **self.env}
        subprocess.run(["slurmctld", "-f", conf], check=True, env=env)
        host = socket.gethostname().split(".")[0]
        subprocess.run(["slurmd", "-f", conf, "-N", host], check=True, env=env)
        _wait_until(self._node_idle, "the node is not idle")

    def _node_idle(self) -> bool:
        try:
            states = self.run("sinfo", "--noheader", "--format=%t").split()
        except subprocess.CalledProcessError:
            return False
        return bool(states) and all(state == "idle" for state in states)

    def stop(self) -> None:
        """Cancel what is left, then stop the daemons this cluster started (by pid file)."""
        try:
            self.run("scancel", "--full", f"--user={os.environ.get('USER', 'root')}")
        except (subprocess.CalledProcessError, FileNotFoundError):
            pass
        for daemon in reversed(DAEMONS):
            pid_file = self.root / f"{daemon}.pid"
            if not pid_file.is_file():
                continue
            pid = int(pid_file.read_text().split()[0])
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            _wait_until(lambda p=pid: not _alive(p), f"{daemon} ({pid}) did not stop", 30.0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a stopped daemon is a zombie until its parent (init) reaps it
    status = Path(f"/proc/{pid}/stat")
    return status.is_file() and status.read_text().split()[2] != "Z"


@contextmanager
def local_slurm(root: Path, shape: ClusterShape = ClusterShape()) -> Iterator[LocalSlurm]:
    """A started one-node cluster under `root`, stopped on exit whatever happened."""
    install_slurm()
    cluster = LocalSlurm(root, shape)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
