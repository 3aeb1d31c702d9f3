"""Claims that survive floating-point noise: outcomes in other runs of the same study.

The same code, params and seeds give byte-identical results at one kernel configuration (the
workflow pins the levels, and the processor's vendor decides MKL's branch: core.provenance); at
another, rounding differs, compounds through training, and a claim near its threshold can flip.
To see which, the study is run again at a second kernel level (`make fragility`) or on a
processor of the other vendor, and the outcome of every check there is recorded in
`results/<id>/fragility.json`, one entry per run (`run_record`, written by `reprolab
fragility`). The summary then marks each check whose outcome differs from any recorded run's
`fragile` (`mark_fragile`): a fragile check never counts as holding, and its own outcome stays
beside it as `holds_pinned`.

A run is tied to the study's params and seeds (`study_digest`): once they change it is stale
and marks nothing, and claims.json says so. A change of the study's code needs new runs too;
each run names the commit it ran.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reprolab.core.io import read_json, write_json
from reprolab.core.params import params_hash, study_params
from reprolab.core.provenance import cpu_vendor, kernel_signature

FRAGILITY = "fragility.json"
"""The record's file name under results/<id>/ (committed with the study's results)."""


def study_digest(params: Mapping[str, Any], seeds: Sequence[int]) -> str:
    """The identity of a study's run: its params section at the active scale and its seeds."""
    return params_hash({"params": dict(params), "seeds": [int(s) for s in seeds]})


def run_record(
    second: Mapping[str, Any],
    kernels: Mapping[str, Any],
    digest: str,
    commit: str,
) -> dict[str, Any]:
    """One run's entry of a fragility record: the outcome of every check of `second`, the
    claims.json of a run with the provenance `kernels` record (its kernel levels and CPU), of the
    params and seeds `digest` identifies and the code of `commit`."""
    return {
        "digest": digest,
        "commit": commit,
        "kernels": dict(kernels["environment"]),
        "cpu_model": kernels.get("cpu_model"),
        "outcomes": [
            {
                "statement": c["statement"],
                "key": list(check_key(c)),
                "holds": bool(c.get("holds_pinned", c["holds"])),
            }
            for c in second["claims"]
        ],
    }


def recorded_runs(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The runs of a fragility record. A record written before runs were listed holds one run
    at a second kernel level as its own fields (`second_kernels`, no CPU recorded); claims.json
    then gets the status of that time (`legacy_status`)."""
    if "runs" in record:
        return list(record["runs"])
    return [
        {
            "digest": record["digest"],
            "commit": record["commit"],
            "kernels": record["second_kernels"],
            "cpu_model": None,
            "outcomes": record["outcomes"],
        }
    ]


def describe_run(run: Mapping[str, Any]) -> str:
    """A run's kernel levels, processor and commit, for claims.json's status text."""
    levels = ", ".join(f"{k}={v}" for k, v in run["kernels"].items() if v)
    where = f" on {run['cpu_model']}" if run["cpu_model"] else ""
    return f"{levels}{where} (commit {run['commit'][:12]})"


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
    """The checks with `fragile` set where the runs of `record` (None: no other run) have an
    outcome for them, and the status for claims.json. A check whose outcome differs from any
    current run's gets `holds` False and keeps its outcome as `holds_pinned`; runs of other
    params or seeds are stale and mark nothing."""
    out = [dict(check) for check in checks]
    if record is None:
        return out, {"status": "not run", "text": "no other run of the study recorded yet"}
    legacy = "runs" not in record
    runs = [run for run in recorded_runs(record) if run["digest"] == digest]
    if not runs:
        return out, {
            "status": "stale",
            "text": f"the {'second-level run' if legacy else 'recorded runs'} used other params "
            "or seeds: rerun make fragility",
        }
    others = [recorded_outcomes(out, run["outcomes"]) for run in runs]
    fragile = 0
    for index, check in enumerate(out):
        seen = [outcomes[index] for outcomes in others if outcomes[index] is not None]
        if not seen:
            continue
        check["fragile"] = any(bool(check["holds"]) != second for second in seen)
        if check["fragile"]:
            fragile += 1
            check["holds_pinned"] = bool(check["holds"])
            check["holds"] = False
    unmatched = sum(all(outcomes[i] is None for outcomes in others) for i in range(len(out)))
    if legacy:
        return out, legacy_status(runs[0], fragile, unmatched)
    return out, {
        "status": "checked",
        "runs": [{"kernels": dict(run["kernels"]), "cpu_model": run["cpu_model"]} for run in runs],
        "fragile": fragile,
        "text": f"outcomes compared with {len(runs)} other run(s): "
        + "; ".join(describe_run(run) for run in runs)
        + unmatched_note(unmatched),
    }


def legacy_status(run: Mapping[str, Any], fragile: int, unmatched: int) -> dict[str, Any]:
    """claims.json's status for a record of one second-level run written before runs were
    listed, as it was then, so that the results committed with such a record stay as made."""
    levels = ", ".join(f"{k}={v}" for k, v in run["kernels"].items())
    return {
        "status": "checked",
        "second_kernels": dict(run["kernels"]),
        "fragile": fragile,
        "text": f"outcomes compared with a run at a second kernel level ({levels}) of "
        f"commit {run['commit'][:12]}" + unmatched_note(unmatched),
    }


def unmatched_note(unmatched: int) -> str:
    """The status text's note of checks the second run has no counterpart for (not marked)."""
    if not unmatched:
        return ""
    return f"; {unmatched} check(s) without a counterpart there, not compared"


def record_second_run(
    study: str, second_dir: Path, config: Mapping[str, Any], out_dir: Path
) -> dict[str, Any]:
    """Add the run whose results/<id> folder is `second_dir` to `<out_dir>/fragility.json` of
    `study` and return the record. The run's digest is of the params `config` gives at its scale;
    a run whose recorded params (provenance) differ from those is an error, and so is one whose
    kernel configuration and processor vendor (`kernel_signature`) are those of the study's own
    results in `out_dir` (it would only repeat them). A recorded run of the same configuration
    is replaced, and runs of other params or seeds are dropped (stale)."""
    provenance_file = second_dir / "provenance.json"
    provenance = read_json(provenance_file)
    scaled = {**config, "scale": provenance["scale"]}
    params = study_params(scaled, study)
    recorded = provenance["params"]
    if params not in (recorded, recorded.get(study)):
        raise ValueError(
            f"{provenance_file}: the run used other `{study}` params than the params file's"
        )
    own_file = out_dir / "provenance.json"
    signature = kernel_signature(provenance["kernels"])
    if signature == kernel_signature(read_json(own_file)["kernels"]):
        raise ValueError(
            f"{provenance_file}: the run used the kernel configuration and processor vendor of "
            f"{own_file}: run it at another `cpu_kernels` or on another vendor's processor"
        )
    digest = study_digest(params, provenance["seeds"])
    run = run_record(
        read_json(second_dir / "claims.json"),
        provenance["kernels"],
        digest,
        provenance["git"]["sha"],
    )
    record_file = out_dir / FRAGILITY
    kept = [
        old
        for old in (recorded_runs(read_json(record_file)) if record_file.is_file() else [])
        if old["digest"] == digest and not _same_configuration(old, run)
    ]
    record = {"study": study, "runs": [*kept, run]}
    write_json(record_file, record)
    return record


def _same_configuration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two runs had the same kernel levels on the same vendor's processor (a run
    recorded without its CPU counts as the same where its levels match)."""
    if a["kernels"] != b["kernels"]:
        return False
    vendors = {cpu_vendor(run["cpu_model"]) for run in (a, b) if run["cpu_model"]}
    return len(vendors) <= 1
