"""Provenance of a study's results: code version, packages, params, threads, platform.

Recorded beside every table (nf-core style): enough to tell which code and which parameters
produced a result and whether two results are comparable. It is the one output that is expected
to change when only the commit changes, so it is kept out of byte-identity checks.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from typing import Any

from reprolab.core.params import params_hash

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
        "platform": {
            "python": sys.version.split()[0],
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
        },
    }
