"""Provenance of a study's results: code version, packages, params, threads, platform, kernels.

Recorded beside every table (nf-core style): enough to tell which code, which locked packages
and which parameters produced a result and whether two results are comparable. Byte identity is
promised only where `kernels` match: `kernel_signature` is the part of it that decides the bits
(torch's and MKL's kernel level, oneDNN's cap, numpy's BLAS and its core type, and the processor's
vendor, since MKL takes a pinned code branch on Intel processors only), while the CPU model's full
name is recorded for the reader. It is the one output that is expected to change when only the
commit changes, so it is kept out of byte-identity checks.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from reprolab.core.determinism import KERNEL_VARIABLES
from reprolab.core.params import params_hash

RECORDED_VARIABLES = (*KERNEL_VARIABLES.values(), "OPENBLAS_CORETYPE")
"""The pinned kernel levels, and OpenBLAS's core type where the machine sets one."""

LOCK_FILE = Path("requirements.lock")
"""Exact versions of every dependency (pip-compile), installed by `make install` and CI."""

PACKAGES = (
    "reprolab",
    "torch",
    "transformers",
    "numpy",
    "scipy",
    "scikit-learn",
    "h5py",
    "pandas",
    "snakemake",
    "dvc",
    "papermill",
    "matplotlib",
)


def git_state() -> dict[str, Any]:
    """HEAD's SHA and whether the work tree has uncommitted changes ('unknown' outside git)."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        return {"sha": "unknown", "dirty": None}
    return {"sha": sha, "dirty": dirty}


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed version of each named distribution ('not installed' when absent)."""
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def lock_hash(path: Path = LOCK_FILE) -> str:
    """sha256 of the dependency lock file ('missing' when the run is outside the repository)."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def cpu_model() -> str:
    """The processor's model name from /proc/cpuinfo (platform.processor() is often empty)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def torch_blas() -> str:
    """The BLAS torch was built with (BLAS_INFO of torch's build configuration)."""
    import torch

    found = re.search(r"\bBLAS_INFO=([^,\s]+)", torch.__config__.show())
    return found.group(1) if found else "unknown"


def numpy_blas() -> list[dict[str, Any]]:
    """numpy/scipy's BLAS libraries: API, version and the core type each dispatches for."""
    from threadpoolctl import threadpool_info

    return sorted(
        (
            {key: info.get(key) for key in ("internal_api", "version", "architecture")}
            for info in threadpool_info()
            if info.get("user_api") == "blas"
        ),
        key=lambda info: sorted((k, str(v)) for k, v in info.items()),
    )


def kernels() -> dict[str, Any]:
    """The CPU kernel configuration this process computes with, and the CPU it runs on."""
    import numpy  # noqa: F401  (loads numpy's BLAS so threadpoolctl can see it)
    import torch

    return {
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_blas": torch_blas(),
        "environment": {name: os.environ.get(name, "") for name in RECORDED_VARIABLES},
        "numpy_blas": numpy_blas(),
        "cpu_model": cpu_model(),
    }


def cpu_vendor(model: str) -> str:
    """The vendor a CPU model name starts with ('Intel(R) Xeon(R) ...' → 'Intel', 'AMD EPYC ...'
    → 'AMD'), or 'unknown'.

    The vendor decides bits that the pinned kernel levels do not: MKL honours `MKL_CBWR=AVX2` on
    Intel processors only and runs its automatic branch elsewhere, so the same job gives other
    low bits of matrix products, exp, log, erf and FFTs on an AMD processor (docs/architecture.md,
    "CPU kernels"). It is read from the model name, which every provenance record has.
    """
    words = model.split()
    return re.sub(r"\((R|TM)\)$", "", words[0]) if words else "unknown"


def kernel_signature(kernels_record: dict[str, Any]) -> dict[str, Any]:
    """What of a `kernels` record decides the bits: everything but the CPU model's full name,
    of which the vendor counts (`cpu_vendor`)."""
    signature = {key: value for key, value in kernels_record.items() if key != "cpu_model"}
    return {**signature, "cpu_vendor": cpu_vendor(kernels_record.get("cpu_model", ""))}


def provenance(
    study: str, scale: str, seeds: list[int], threads: int, params: Any
) -> dict[str, Any]:
    """The provenance.json document of one study."""
    return {
        "study": study,
        "scale": scale,
        "seeds": seeds,
        "threads": threads,
        "params": params,
        "params_sha256": params_hash({"scale": scale, "seeds": seeds, "study": params}),
        "git": git_state(),
        "packages": package_versions(),
        "requirements_lock_sha256": lock_hash(),
        "kernels": kernels(),
        "platform": {
            "python": sys.version.split()[0],
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
        },
    }
