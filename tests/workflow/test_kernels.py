"""The CPU kernel level is pinned for every job, so bytes do not depend on the native ISA."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.conftest import run

pytestmark = pytest.mark.integration
NATIVE = "cpu_kernels={torch: native, mkl: native, onednn: native}"


JOBS = ["results/ndfa/runs/teacher/ndfa/seed0/metrics.json"]
"""One training job (the deep narrow teacher task, ndfa's own method): seconds at ci scale."""


def ndfa_run_hashes(repo: Path, level: str, *config: str) -> dict[str, str]:
    """sha256 of the run files of `JOBS` at ci scale on a machine whose native torch level is
    `level` (emulated by the variable torch honours when the workflow does not pin it)."""
    run(
        ["snakemake", "--cores", "2", "--forceall", *JOBS, "--config", "scale=ci", *config],
        repo,
        extra_env={"ATEN_CPU_CAPABILITY": level, "MKL_CBWR": "AUTO"},
    )
    files = sorted((repo / "results/ndfa/runs").rglob("metrics.json"))
    return {str(f.relative_to(repo)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def test_pinned_runs_are_byte_identical_whatever_the_native_level(repo_copy: Path):
    pinned = [ndfa_run_hashes(repo_copy, level) for level in ("default", "avx512")]
    assert pinned[0] and pinned[0] == pinned[1]
    # The control: left native, the two levels give different bits, so the pin is what holds.
    # AVX2 rather than AVX-512, so the control runs on any AVX2 machine (where torch would not
    # take an AVX-512 request) and never runs ATen's AVX-512 kernels, which died with SIGILL on an
    # AMD EPYC CI machine.
    native = [ndfa_run_hashes(repo_copy, level, NATIVE) for level in ("default", "avx2")]
    assert native[0] != native[1]
