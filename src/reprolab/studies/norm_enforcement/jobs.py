"""The norm_enforcement run job: every mechanism in every environment, and the populations.

One job per evaluation seed plays (1) the table's episodes — every listed mechanism in every
listed environment with the main population (`population`), each mechanism with its tuned
fine — and (2) the population sweep — every population of `populations` in every environment
under each of `population_mechanisms`. Within a seed, the episodes of one environment and
population share one episode seed for every mechanism (`episode_seed`): the same agent
qualities, the same agents' random streams, so mechanisms are compared on paired draws.

Outputs: metrics.json (per episode the table's columns and the claims' numbers, and the
table episodes' trajectories for the report) and episodes.h5 (the table episodes' full logs,
datasets `<environment>/<mechanism>/<field>`). At paper scale the adaptive seats are a local
language model (`agents.backend: language_model`), whose transcripts go to transcripts.jsonl.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reprolab.core.determinism import derive_seed
from reprolab.core.io import write_h5, write_json, write_jsonl
from reprolab.core.progress import progress
from reprolab.core.tuning import selected
from reprolab.studies.norm_enforcement.agents import Actor
from reprolab.studies.norm_enforcement.environments import build_environment
from reprolab.studies.norm_enforcement.mechanisms import EnforcementParams
from reprolab.studies.norm_enforcement.metrics import episode_metrics, trajectories
from reprolab.studies.norm_enforcement.simulation import EpisodeLog, run_episode

STUDY = "norm_enforcement"
LOG_FIELDS = (
    "active",
    "violated",
    "conduct",
    "reports",
    "payoffs",
    "fines",
    "suspension",
    "audited",
    "detected",
    "confirmed",
    "belief",
    "welfare",
)
"""The EpisodeLog arrays written to episodes.h5."""


def tuning_key(environment: str, mechanism: str) -> str:
    """The `method` of a mechanism's tuning record in one environment."""
    return f"{environment}/{mechanism}"


def enforcement_for(
    params: Mapping[str, Any],
    environment: str,
    mechanism: str,
    tuned: Mapping[str, Mapping[str, Any]],
) -> EnforcementParams:
    """params `enforcement` with the mechanism's tuned base fine in `environment` (`none`,
    which charges nothing, has none); a fined mechanism without its tuning record is an error."""
    if mechanism == "none":
        fine = 0.0
    else:
        key = tuning_key(environment, mechanism)
        if key not in tuned:
            raise ValueError(
                f"norm_enforcement: no tuning record for {key} (norm_enforcement_tune)"
            )
        fine = float(tuned[key]["fine"])
    return EnforcementParams.from_params(params["enforcement"], fine)


def episode_seed(seed: int, environment: str, population: str) -> int:
    """The episode seed shared by every mechanism of one seed, environment and population."""
    return derive_seed(seed, STUDY, environment, population)


def play(
    params: Mapping[str, Any],
    environment: str,
    mechanism: str,
    enforcement: EnforcementParams,
    population: Mapping[str, int],
    seed: int,
    model: Actor | None = None,
) -> EpisodeLog:
    """One episode of `mechanism` in `environment` with `population` (module docstring)."""
    return run_episode(
        build_environment(environment, params["environment"][environment]),
        mechanism,
        enforcement,
        population,
        params["agents"],
        params["perception"],
        int(params["rounds"]),
        seed,
        model,
    )


def language_model(params: Mapping[str, Any]) -> Actor | None:
    """The local language model that plays the adaptive seats (its params: folder, answer length,
    device, precision; a parse failure plays comply-and-report-nobody), or None for the
    bandits."""
    agents = params["agents"]
    if agents["backend"] != "language_model":
        return None
    import torch

    from reprolab.core.determinism import resolve_device
    from reprolab.studies.norm_enforcement.actions import Action
    from reprolab.studies.norm_enforcement.language_agent import LanguageModelAgent

    spec = agents["language_model"]
    return LanguageModelAgent(
        Path(spec["folder"]),
        int(spec["max_new_tokens"]),
        Action(violate=False),
        resolve_device(spec["device"]),
        getattr(torch, spec["dtype"]),
    )


def run_job(
    params: Mapping[str, Any],
    seed: int,
    tuning_files: Sequence[str | Path],
    out_dir: str | Path,
) -> dict[str, Any]:
    """Play every episode of `seed` and write metrics.json and episodes.h5 to `out_dir`
    (transcripts.jsonl too with a language model)."""
    tuned = selected(tuning_files)
    model = language_model(params)
    audit_cost = float(params["enforcement"]["audit_cost"])
    windows = int(params["report"]["windows"])
    table: dict[str, dict[str, Any]] = {}
    curves: dict[str, dict[str, Any]] = {}
    logs: dict[str, Any] = {}
    for environment in params["environments"]:
        shared = episode_seed(seed, environment, "population")
        table[environment], curves[environment] = {}, {}
        for mechanism in progress(params["methods"], desc=f"seed {seed} {environment}"):
            enforcement = enforcement_for(params, environment, mechanism, tuned)
            log = play(
                params, environment, mechanism, enforcement, params["population"], shared, model
            )
            table[environment][mechanism] = episode_metrics(log, audit_cost)
            curves[environment][mechanism] = trajectories(log, windows)
            for field in LOG_FIELDS:
                logs[f"{environment}/{mechanism}/{field}"] = getattr(log, field)
    populations: dict[str, dict[str, Any]] = {}
    for name, population in params["populations"].items():
        populations[name] = {}
        for environment in params["environments"]:
            shared = episode_seed(seed, environment, name)
            populations[name][environment] = {
                mechanism: episode_metrics(
                    play(
                        params,
                        environment,
                        mechanism,
                        enforcement_for(params, environment, mechanism, tuned),
                        population,
                        shared,
                        model,
                    ),
                    audit_cost,
                )
                for mechanism in progress(
                    params["population_mechanisms"], desc=f"seed {seed} {name} {environment}"
                )
            }
    out = Path(out_dir)
    record = {
        "seed": seed,
        "fines": {
            environment: {
                m: enforcement_for(params, environment, m, tuned).fine for m in params["methods"]
            }
            for environment in params["environments"]
        },
        "table": table,
        "populations": populations,
        "trajectories": curves,
    }
    write_h5(out / "episodes.h5", logs, attrs={"seed": seed, "study": STUDY})
    if model is not None:
        _write_transcripts(out / "transcripts.jsonl", model)
    write_json(out / "metrics.json", record)
    return record


def _write_transcripts(path: Path, model: Actor) -> None:
    """The language model's transcripts, one JSON line each (prompt, raw, parsed, error)."""
    from reprolab.studies.norm_enforcement.language_agent import transcript_record

    write_jsonl(path, [transcript_record(t) for t in model.transcripts])  # type: ignore[attr-defined]
