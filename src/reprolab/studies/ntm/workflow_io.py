"""What ntm's rule file and results need without importing torch: the tuned methods, the
table's row names and the check of the study's params."""

from __future__ import annotations

from typing import Any

TUNED_METHODS = ("fm", "cd", "gauss", "ntm")
"""The methods that train (each with its tuning job): flow matching, consistency distillation,
the Gaussian-step and the normalizing trajectory model."""
DATASET_KINDS = ("8gauss", "checker", "digits", "cifar10", "image_folder")
TRANSPORTERS = ("affine", "spline")


def row_names(params: dict[str, Any]) -> dict[str, str]:
    """{row key: the table's row name}, in table order; the names carry K (params `times`)."""
    k = len(params["times"]) - 1
    return {
        "reference": f"FM-Euler-{params['reference_steps']}",
        "fm": f"FM-Euler-{k}",
        "gauss": f"Gauss-{k}",
        "cd": f"CD-{k}",
        "ntm": f"NTM-{k}",
        "tweedie": f"NTM-{k}+Tweedie",
        "sd": f"NTM-{k}+SD",
    }


def check_method(method: str) -> None:
    """ValueError naming `method` unless it is one of TUNED_METHODS."""
    if method not in TUNED_METHODS:
        raise ValueError(f"ntm: unknown method {method!r}; expected one of {TUNED_METHODS}")


def check_params(params: dict[str, Any]) -> None:
    """ValueError naming the key when ntm's params cannot run: a time grid that is not
    increasing from t₀ ∈ (0, 1) to exactly 1, an unknown dataset kind or transporter, a tuning
    dataset that is not a dataset, a tuned method without a grid."""
    times = [float(t) for t in params["times"]]
    if len(times) < 2 or times[-1] != 1.0 or not 0.0 < times[0] < 1.0:
        raise ValueError(f"ntm.times: expected t0 in (0, 1) up to exactly 1.0, got {times}")
    if any(b <= a for a, b in zip(times, times[1:], strict=False)):
        raise ValueError(f"ntm.times: must increase strictly, got {times}")
    for name, spec in params["datasets"].items():
        if spec.get("kind") not in DATASET_KINDS:
            raise ValueError(
                f"ntm.datasets.{name}.kind: {spec.get('kind')!r} is not one of {DATASET_KINDS}"
            )
    if params["transporter"] not in TRANSPORTERS:
        raise ValueError(f"ntm.transporter: {params['transporter']!r} is not one of {TRANSPORTERS}")
    if params["tune"]["dataset"] not in params["datasets"]:
        raise ValueError(
            f"ntm.tune.dataset: {params['tune']['dataset']!r} is not one of "
            f"{sorted(params['datasets'])}"
        )
    missing = [m for m in TUNED_METHODS if m not in params["tune"]["grid"]]
    if missing:
        raise ValueError(f"ntm.tune.grid: no grid for {missing}")
