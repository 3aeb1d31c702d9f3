"""Claims that survive floating-point noise: outcomes under a second CPU kernel level.

The same code, params and seeds give byte-identical results at one kernel level (the workflow
pins it); at another level rounding differs, compounds through training, and a claim near its
threshold can flip. To see which, the study is run a second time at another level (`make
fragility`) and the outcome of every check there is recorded in `results/<id>/fragility.json`
(`fragility_record`, written by `reprolab fragility`). The summary then marks each check whose
outcome at the pinned level differs from the recorded one `fragile` (`mark_fragile`): a
fragile check never counts as holding, and its pinned-level outcome stays beside it as
`holds_pinned`.

A record is tied to the study's params and seeds (`study_digest`): once they change it is
stale, no check is marked and claims.json says so. A change of the study's code needs a new
second-level run too; the record names the commit it ran.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reprolab.core.determinism import kernel_environment
from reprolab.core.io import read_json, write_json
from reprolab.core.params import merged_top_level, params_hash, study_params

FRAGILITY = "fragility.json"
"""The record's file name under results/<id>/ (committed with the study's results)."""


def study_digest(params: Mapping[str, Any], seeds: Sequence[int]) -> str:
    """The identity of a study's run: its params section at the active scale and its seeds."""
    return params_hash({"params": dict(params), "seeds": [int(s) for s in seeds]})


def fragility_record(
    study: str,
    second: Mapping[str, Any],
    kernels: Mapping[str, Any],
    digest: str,
    commit: str,
) -> dict[str, Any]:
    """The fragility record of `study`: the outcome of every check of `second`, the claims.json
    of a run at the level `kernels` describes, of the params and seeds `digest` identifies and
    the code of `commit`."""
    return {
        "study": study,
        "digest": digest,
        "commit": commit,
        "second_kernels": dict(kernels),
        "outcomes": [
            {
                "statement": c["statement"],
                "key": list(check_key(c)),
                "holds": bool(c.get("holds_pinned", c["holds"])),
            }
            for c in second["claims"]
        ],
    }


def check_key(check: Mapping[str, Any]) -> tuple[str, str, str]:
    """What identifies a check besides its statement: its kind, metric and the method it is
    about (the first of `methods`)."""
    methods = check.get("methods") or [""]
    return (str(check["kind"]), str(check.get("metric", "")), str(methods[0]))


def recorded_outcomes(
    checks: Sequence[Mapping[str, Any]], recorded: Sequence[Mapping[str, Any]]
) -> list[bool | None]:
    """The recorded outcome of each check, None where the record has none. A check is found by
    its statement; a statement that names a rival the results chose (ssg's "the best baseline
    (abmil)") can differ between the two runs, so a check left unmatched is then found by its
    `check_key` among the recorded outcomes left unmatched, where that key is unique on both
    sides."""
    statements = {c["statement"] for c in checks}
    by_statement = {r["statement"]: bool(r["holds"]) for r in recorded}
    left_checks = Counter(check_key(c) for c in checks if c["statement"] not in by_statement)
    left_recorded = [r for r in recorded if r["statement"] not in statements]
    left_keys = Counter(tuple(r["key"]) for r in left_recorded)
    by_key = {tuple(r["key"]): bool(r["holds"]) for r in left_recorded}
    outcomes: list[bool | None] = []
    for check in checks:
        key = check_key(check)
        if check["statement"] in by_statement:
            outcomes.append(by_statement[check["statement"]])
        elif left_checks[key] == 1 and left_keys[key] == 1:
            outcomes.append(by_key[key])
        else:
            outcomes.append(None)
    return outcomes


def mark_fragile(
    checks: Sequence[dict[str, Any]], record: Mapping[str, Any] | None, digest: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The checks with `fragile` set where `record` lists them (None: no second-level run),
    and the status for claims.json. A check whose outcome differs from the record's gets
    `holds` False and keeps its outcome as `holds_pinned`; nothing is marked when the record
    is stale (other params or seeds)."""
    out = [dict(check) for check in checks]
    if record is None:
        return out, {"status": "not run", "text": "no run under a second kernel level yet"}
    if record["digest"] != digest:
        return out, {
            "status": "stale",
            "text": "the second-level run used other params or seeds: rerun make fragility",
        }
    fragile = 0
    seconds = recorded_outcomes(out, record["outcomes"])
    for check, second in zip(out, seconds, strict=True):
        if second is None:
            continue
        check["fragile"] = bool(check["holds"]) != second
        if check["fragile"]:
            fragile += 1
            check["holds_pinned"] = bool(check["holds"])
            check["holds"] = False
    levels = ", ".join(f"{k}={v}" for k, v in record["second_kernels"].items())
    return out, {
        "status": "checked",
        "second_kernels": dict(record["second_kernels"]),
        "fragile": fragile,
        "text": f"outcomes compared with a run at a second kernel level ({levels}) of "
        f"commit {record['commit'][:12]}" + unmatched_note(seconds.count(None)),
    }


def unmatched_note(unmatched: int) -> str:
    """The status text's note of checks the second run has no counterpart for (not marked)."""
    if not unmatched:
        return ""
    return f"; {unmatched} check(s) without a counterpart there, not compared"


def record_second_run(
    study: str, second_dir: Path, config: Mapping[str, Any], out_dir: Path
) -> dict[str, Any]:
    """Write `<out_dir>/fragility.json` for `study` from the claims and provenance of a run at
    a second kernel level (`second_dir`, its results/<id> folder), and return the record. The
    digest is of the params `config` gives at the run's scale; a run whose recorded params
    (provenance) differ from those, or whose kernel level is the pinned one of `config`, is an
    error that names its file."""
    provenance_file = second_dir / "provenance.json"
    provenance = read_json(provenance_file)
    scaled = {**config, "scale": provenance["scale"]}
    pinned = kernel_environment(merged_top_level(scaled)["cpu_kernels"])
    second_env = provenance["kernels"]["environment"]
    if all(second_env.get(key) == value for key, value in pinned.items()):
        raise ValueError(
            f"{provenance_file}: the run used the pinned kernel level {pinned}: run the "
            "second level with another `cpu_kernels`"
        )
    params = study_params(scaled, study)
    recorded = provenance["params"]
    if params not in (recorded, recorded.get(study)):
        raise ValueError(
            f"{provenance_file}: the run used other `{study}` params than the params file's"
        )
    record = fragility_record(
        study,
        read_json(second_dir / "claims.json"),
        second_env,
        study_digest(params, provenance["seeds"]),
        provenance["git"]["sha"],
    )
    write_json(out_dir / FRAGILITY, record)
    return record
