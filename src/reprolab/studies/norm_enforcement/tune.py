"""The `norm_enforcement_tune` jobs: each mechanism's base fine, per environment.

One job per environment. Every mechanism that charges fines (all but `none`) gets the same
grid of base fines (`tune.grid.fine`, within [0, enforcement.max_fine]: the largest fine any
mechanism may charge is a fixed rule of the setting, not tuned) and the same budget: every
grid point plays one episode per tuning seed with the main population (at paper scale with the
language model in the adaptive seats, as the run jobs). The score is what the
mechanism leaves society per round: the environment's welfare minus the enforcement cost
(audits, fines on compliant agents, their forgone payoff while suspended); the highest mean
over the tuning seeds wins (core.tuning). A winner at 0 or at max_fine is at the end of the
fine's domain, not on a grid edge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.norm_enforcement.agents import Actor
from reprolab.studies.norm_enforcement.jobs import episode_seed, language_model, play, tuning_key
from reprolab.studies.norm_enforcement.mechanisms import EnforcementParams
from reprolab.studies.norm_enforcement.metrics import episode_metrics
from reprolab.studies.norm_enforcement.workflow_io import fine_limits, tuned_mechanisms

METRIC = "welfare − enforcement cost per round, mean over the tuning seeds"


def social_value(
    params: Mapping[str, Any],
    environment: str,
    mechanism: str,
    fine: float,
    seed: int,
    model: Actor | None = None,
) -> float:
    """Welfare minus enforcement cost per round of one tuning episode at base `fine` (the
    adaptive seats played by `model` when given, as in the run jobs)."""
    enforcement = EnforcementParams.from_params(params["enforcement"], fine)
    shared = episode_seed(seed, environment, "population")
    log = play(params, environment, mechanism, enforcement, params["population"], shared, model)
    scores = episode_metrics(log, enforcement.audit_cost)
    return scores["welfare"] - scores["enforcement_cost"]


def tune_environment(
    params: Mapping[str, Any],
    environment: str,
    seeds: Sequence[int],
    out_paths: Mapping[str, str | Path],
) -> None:
    """Tune every fined mechanism's base fine in `environment` on the tuning `seeds`; write
    each record to `out_paths[mechanism]`."""
    missing = sorted(set(tuned_mechanisms(params)) - set(out_paths))
    if missing:
        raise ValueError(f"norm_enforcement tuning of {environment}: no output for {missing}")
    grid = {"fine": list(params["tune"]["grid"]["fine"])}
    model = language_model(params)
    for mechanism in tuned_mechanisms(params):

        def evaluate(values: dict[str, Any], seed: int, mechanism: str = mechanism) -> float:
            score = social_value(params, environment, mechanism, values["fine"], seed, model)
            print(f"tune {environment}/{mechanism} {values} seed {seed}: {score:.4f}")
            return score

        record = tune(
            tuning_key(environment, mechanism),
            grid,
            evaluate,
            seeds,
            METRIC,
            "max",
            fine_limits(params),
        )
        write_tuning(out_paths[mechanism], record)
