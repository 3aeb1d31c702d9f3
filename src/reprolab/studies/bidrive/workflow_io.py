"""What bidrive's rule file and results need without importing torch: the trained models, the
table's rows and the check of the study's params."""

from __future__ import annotations

from typing import Any

TRAINED = ("teacher", "student", "fm", "mlp")
"""The models trained from the expert plans (each with its tuning job): the autoregressive-flow
teacher, the coupling-flow student (by maximum likelihood; distilled from it), the
flow-matching planner and the regression MLP."""

DISTILLED = "distilled"
"""The distilled student: its distillation's learning rate has its own tuning job, after the
teacher's and the student's."""
TUNED = (*TRAINED, DISTILLED)
"""Every tuning record a run job reads."""

ROWS = {
    "const_vel": "ConstVel",
    "mlp": "MLP-L2",
    "fm": "FM-{fm_steps}+heuristic",
    "teacher": "AR-teacher+ML",
    "student": "Student-MLE+ML",
    "distilled_heuristic": "BiDrive-distill+heuristic",
    "distilled": "BiDrive-distill+ML",
    "lo": "BiDrive+LO",
}
"""Row key → the table's row name (filled with the params), in table order."""


def row_names(params: dict[str, Any]) -> dict[str, str]:
    """{row key: row name} in table order."""
    steps = params["models"]["fm"]["steps"]
    return {key: name.format(fm_steps=steps) for key, name in ROWS.items()}


def check_model(model: str) -> None:
    """ValueError naming `model` unless it is one of TRAINED."""
    if model not in TRAINED:
        raise ValueError(f"bidrive: unknown model {model!r}; expected one of {TRAINED}")


def check_params(params: dict[str, Any]) -> None:
    """ValueError naming the key when bidrive's params cannot run: a scene mix that is not
    three shares summing to 1, more latents to optimise than samples, a tuned model (or the
    distillation) without a grid."""
    mix = [float(v) for v in params["scenes"]["mix"]]
    if len(mix) != 3 or abs(sum(mix) - 1.0) > 1e-9:
        raise ValueError(f"bidrive.scenes.mix: expected 3 shares summing to 1, got {mix}")
    samples, top = params["selection"]["samples"], params["latent_optimization"]["top"]
    if top > samples:
        raise ValueError(
            f"bidrive.latent_optimization.top: {top} latents from {samples} samples "
            "(bidrive.selection.samples)"
        )
    missing = [m for m in TUNED if m not in params["tune"]["grid"]]
    if missing:
        raise ValueError(f"bidrive.tune.grid: no grid for {missing}")
