"""Keep dvc.lock honest about the sources that made the committed results.

dvc.lock records, per stage, the hash of every dependency the outputs were made from. A commit
that changes a stage's code (its rule file, `src/reprolab/core`, its study package) or its params
without recording the new hashes leaves `dvc status` saying the stage is stale in every clone,
even where the outputs are unchanged, so nobody can tell a real change from a forgotten one.

`stale_sources` lists, per stage, the sources (the dependencies no stage produces: files,
folders and params values) whose recorded hash or value differs from the working tree; a stage
whose inputs from another stage changed is waiting for a rerun anyway (the index after a study
changed) and is not listed. `record_sources` writes the working tree's hashes of those sources
into dvc.lock, leaving every output and every produced input as recorded: for a change that a
reproduction showed leaves the outputs unchanged (`dvc commit -f` does the same where the
outputs are present, and a clone has only the committed ones).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from reprolab.core.io import write_text
from reprolab.core.params import load_yaml

LOCK = "dvc.lock"
PIPELINE = "dvc.yaml"
PARAMS_FILE = "params.yaml"
HASH_FIELDS = ("md5", "size", "nfiles")
"""What dvc.lock records of a file or folder dependency."""


def declared_outputs(stage: Mapping[str, Any]) -> list[str]:
    """The paths a dvc.yaml stage declares as outs and metrics (an entry with options, such as
    `{path: {cache: false}}`, gives its path)."""
    entries = [*stage.get("outs", ()), *stage.get("metrics", ())]
    return [next(iter(entry)) if isinstance(entry, Mapping) else entry for entry in entries]


def produced_paths(root: Path) -> set[str]:
    """Every output path that a stage of dvc.yaml declares."""
    stages = yaml.safe_load((root / PIPELINE).read_text())["stages"]
    return {path for stage in stages.values() for path in declared_outputs(stage)}


def dvc_status(root: Path) -> dict[str, Any]:
    """`dvc status --json` of the repository at `root` (a clean pipeline gives {})."""
    result = subprocess.run(
        [sys.executable, "-m", "dvc", "status", "--json"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"dvc status in {root} failed: {result.stderr.strip()}")
    return json.loads(result.stdout or "{}")


def stale_sources(status: Mapping[str, Iterable[Any]], produced: set[str]) -> dict[str, list[str]]:
    """Per stage of `status` (`dvc status --json`), the changed sources (paths no stage in
    `produced` makes, and params files), for the stages none of whose produced inputs was
    modified. A produced input that is absent (a clone without the data) counts as unchanged."""
    stale = {}
    for stage, items in status.items():
        changed: dict[str, Any] = {}
        for item in items:
            if isinstance(item, Mapping):
                changed.update(item.get("changed deps", {}))
        if any(path in produced and state == "modified" for path, state in changed.items()):
            continue
        sources = sorted(path for path in changed if path not in produced)
        if sources:
            stale[stage] = sources
    return stale


def record_sources(root: Path, stages: Iterable[str]) -> list[str]:
    """Write the working tree's hashes of the sources of `stages` (files, folders, params
    values) into dvc.lock and return what changed, as 'stage: path' lines. Outputs and inputs
    that another stage produces keep their recorded hashes."""
    from dvc.repo import Repo
    from ruamel.yaml import YAML

    wanted = set(stages)
    produced = produced_paths(root)
    loader = YAML()
    lock_file = root / LOCK
    lock = loader.load(lock_file.read_text())
    params = load_yaml(root / PARAMS_FILE)
    changed = []
    for stage in Repo(str(root)).index.stages:
        name = stage.name
        if name not in wanted:
            continue
        if name not in lock["stages"]:
            raise KeyError(f"{lock_file}: no stage '{name}' recorded (run it first)")
        entry = lock["stages"][name]
        recorded = {dep["path"]: dep for dep in entry["deps"]}
        for dep in stage.deps:
            path = str(dep.def_path)
            if path in produced or path not in recorded:
                continue
            dep.save()
            fresh = dep.dumpd()
            if any(recorded[path].get(key) != fresh.get(key) for key in HASH_FIELDS):
                recorded[path].update({k: fresh[k] for k in HASH_FIELDS if k in fresh})
                changed.append(f"{name}: {path}")
        for values in (entry.get("params") or {}).values():
            for key in values:
                if values[key] != params[key]:
                    values[key] = params[key]
                    changed.append(f"{name}: {PARAMS_FILE}:{key}")
    text = io.StringIO()
    loader.dump(lock, text)
    write_text(lock_file, text.getvalue())
    return changed
