"""`reprolab new-study <id>`: write the skeleton of a new study.

The skeleton is a study that runs: a package whose results module implements the results
interface (reprolab.core.summary), a `<id>_tune` rule that chooses ridge regression's penalty
on the tuning seeds (reprolab.core.tuning), one job rule that fits ridge regression and a mean
predictor on synthetic linear data per seed with the tuned values, a params section with `ci`
and `paper` scales, its schema, a notebook with a `parameters` cell, a test and a page of
design notes. Add the id to `studies`
in params.yaml and `snakemake --cores 2 --config scale=ci <id>` writes every contract file;
then replace the toy experiment with the paper's. Nothing is overwritten: an id that exists
anywhere is refused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from reprolab.core.layout import known_studies

STUDY_ID = re.compile(r"^[a-z][a-z0-9_]*$")


def skeleton_files(study: str) -> dict[str, str]:
    """Path (relative to the repository root) → text of every file of the skeleton."""
    files = {
        f"src/reprolab/studies/{study}/__init__.py": _INIT,
        f"src/reprolab/studies/{study}/jobs.py": _JOBS,
        f"src/reprolab/studies/{study}/results.py": _RESULTS,
        f"workflow/rules/{study}.smk": _RULES,
        f"workflow/scripts/{study}_run.py": _RUN_SCRIPT,
        f"workflow/scripts/{study}_tune.py": _TUNE_SCRIPT,
        f"src/reprolab/schemas/studies/{study}.schema.yaml": _SCHEMA,
        f"tests/studies/{study}/__init__.py": "",
        f"tests/studies/{study}/test_results.py": _TEST,
        f"docs/studies/{study}.md": _DOC,
    }
    out = {path: text.replace("STUDY", study) for path, text in files.items()}
    out[f"workflow/notebooks/{study}.ipynb"] = _notebook(study)
    return out


def new_study(study: str, root: str | Path = ".") -> list[Path]:
    """Write the skeleton of `study` under `root` and append its params section to
    params.yaml; return the files written. Raises ValueError for a bad or taken id."""
    root = Path(root)
    if not STUDY_ID.match(study):
        raise ValueError(f"study id {study!r}: expected lower case letters, digits and _")
    params_file = root / "params.yaml"
    params_text = params_file.read_text()
    files = skeleton_files(study)
    taken = [path for path in files if (root / path).exists()]
    if study in known_studies() or taken or re.search(rf"^{study}:", params_text, re.M):
        raise ValueError(f"study id {study!r} is taken: {taken or 'params.yaml or a package'}")
    written = []
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written.append(target)
    params_file.write_text(params_text.rstrip("\n") + "\n\n" + _PARAMS.replace("STUDY", study))
    written.append(params_file)
    return written


def _notebook(study: str) -> str:
    """The report template: a `parameters` cell (papermill fills it) and one figure."""
    sources = [
        ("markdown", f"# {study}\n\nTest MSE per method and seed, then the table.", None),
        (
            "code",
            f'results_dir = "results/{study}"\nseeds = [0, 1]\nscale = "ci"\nmethods = []',
            ["parameters"],
        ),
        (
            "code",
            "import json\nfrom pathlib import Path\n\nimport matplotlib.pyplot as plt\n"
            "import pandas as pd\n\n"
            "metrics = json.loads((Path(results_dir) / 'metrics.json').read_text())\n"
            "fig, ax = plt.subplots(figsize=(5, 3))\n"
            "for method in methods:\n"
            "    ax.plot(seeds, metrics['test_mse'][method]['per_seed'], 'o-', label=method)\n"
            "ax.set_xlabel('seed')\nax.set_ylabel('test MSE')\nax.legend()\nplt.show()\n"
            "pd.read_csv(Path(results_dir) / 'table.csv')",
            None,
        ),
    ]
    cells = [_cell(n, kind, source, tags) for n, (kind, source, tags) in enumerate(sources)]
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(notebook, indent=1) + "\n"


def _cell(number: int, kind: str, source: str, tags: list[str] | None) -> dict:
    """One notebook cell (nbformat 4.5, numbered ids so the file is the same every time)."""
    cell: dict = {
        "cell_type": kind,
        "id": f"cell-{number}",
        "metadata": {"tags": tags} if tags else {},
        "source": source,
    }
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


_INIT = '''"""STUDY: the paper's question in one line (notes: docs/studies/STUDY.md)."""
'''

_JOBS = '''"""STUDY jobs: tune each method on the tuning seeds; every method on one seed's data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.core.io import write_json
from reprolab.core.tuning import tune, write_tuning

STUDY = "STUDY"


def linear_data(params: dict[str, Any], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets of a noisy linear model with random weights: 2 x `samples` rows of
    the seed's draw (the first half trains, the second half tests)."""
    data = params["data"]
    rng = np.random.default_rng(derive_seed(seed, STUDY, "data"))
    x = rng.normal(size=(2 * data["samples"], data["features"]))
    w = rng.normal(size=data["features"])
    return x, x @ w + data["noise"] * rng.normal(size=len(x))


def fit_predict(method: str, values: dict[str, Any], x_train, y_train, x_test) -> np.ndarray:
    """Predictions of `method` with its tuned `values`: ridge regression (penalty `ridge`), or
    the training mean (the baseline, nothing to tune)."""
    if method == "ridge":
        gram = x_train.T @ x_train + values["ridge"] * np.eye(x_train.shape[1])
        return x_test @ np.linalg.solve(gram, x_train.T @ y_train)
    if method == "mean":
        return np.full(len(x_test), y_train.mean())
    raise ValueError(f"{STUDY}: unknown method {method!r}")


def mse(prediction: np.ndarray, target: np.ndarray) -> float:
    return float(np.mean((prediction - target) ** 2))


def tune_method(
    params: dict[str, Any], method: str, seeds: list[int], out_path: str | Path
) -> dict[str, Any]:
    """Choose `method`'s values from its grid (`tune.grid.<method>`) by validation MSE on the
    tuning seeds' training halves (their last quarter validates); write the tuning record."""

    def validation_mse(values: dict[str, Any], seed: int) -> float:
        x, y = linear_data(params, seed)
        n = params["data"]["samples"]
        fit, val = slice(0, n - n // 4), slice(n - n // 4, n)
        return mse(fit_predict(method, values, x[fit], y[fit], x[val]), y[val])

    grid = params["tune"]["grid"][method]
    record = tune(method, grid, validation_mse, seeds, "validation MSE", "min")
    write_tuning(out_path, record)
    return record


def run_job(
    params: dict[str, Any], seed: int, tuned: dict[str, dict[str, Any]], out_dir: str | Path
) -> dict[str, Any]:
    """Every method's test MSE on one seed's data (the same data for every method), each with
    its tuned values; writes and returns metrics.json."""
    x, y = linear_data(params, seed)
    half = params["data"]["samples"]
    out = {"seed": seed, "test_mse": {}}
    for method in params["methods"]:
        prediction = fit_predict(method, tuned[method], x[:half], y[:half], x[half:])
        out["test_mse"][method] = mse(prediction, y[half:])
    write_json(Path(out_dir) / "metrics.json", out)
    return out
'''

_RESULTS = '''"""The STUDY table, claim checks, metrics and curves, from the per-seed metrics files.

Table: rows = methods, one column: test MSE, mean ± std over seeds. Claim (paired over seeds,
one-sided paired t-test, Holm-adjusted p < alpha): the method has a lower test MSE than the
baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import paired_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats

COLUMN = "test MSE"
NOTES = (
    "One-sided paired t-test over the seeds (same seed = same data for every method), "
    "Holm-corrected within the study; the rule was fixed in params before the run."
)


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> list[dict]:
    """metrics.json of every seed, in seed order."""
    return [read_json(Path(runs_dir) / f"seed{seed}" / "metrics.json") for seed in seeds]


def per_seed(runs: list[dict], method: str) -> np.ndarray:
    """Test MSE of `method`, one value per seed."""
    return np.asarray([run["test_mse"][method] for run in runs], dtype=float)


def table(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> Table:
    """Rows = methods, one column: test MSE."""
    records = [
        Record(method, COLUMN, seed, value)
        for method in params["methods"]
        for seed, value in zip(seeds, per_seed(runs, method), strict=True)
    ]
    return Table(records, list(params["methods"]), [COLUMN], "STUDY: test MSE, mean ± std.")


def claim_checks(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> list[dict]:
    """The method beats the baseline on test MSE."""
    claims = params["claims"]
    method, baseline = claims["method"], claims["baseline"]
    return [
        paired_check(
            f"{method} has a lower test MSE than {baseline}",
            COLUMN,
            method,
            baseline,
            per_seed(runs, method),
            per_seed(runs, baseline),
            seeds,
            direction="less",
            alpha=claims["alpha"],
            min_effect=claims["min_effect"],
        )
    ]


def study_metrics(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> dict:
    """Seed statistics of every method's test MSE."""
    return {
        "seeds": list(seeds),
        "test_mse": {m: seed_stats(per_seed(runs, m)) for m in params["methods"]},
    }


def curve_rows(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: each method's test MSE against the seed (replace with a learning curve)."""
    return curve_frame(
        (method, float(seed), float(value))
        for method in params["methods"]
        for seed, value in zip(seeds, per_seed(runs, method), strict=True)
    )
'''

_RULES = """# STUDY: one tuning job per method (on the tuning seeds), one job per seed runs every
# method with the tuned values; the shared tail (tail.smk) writes the table, claims,
# provenance and report.
STUDY_SECTION = section("STUDY")
STUDY_TUNING = expand(
    "data/STUDY/tuning/{method}.json",
    method=STUDY_SECTION["methods"],
)
STUDY_RUNS = expand("results/STUDY/runs/seed{seed}/metrics.json", seed=SEEDS)


rule STUDY_tune_method:
    output:
        tuned="data/STUDY/tuning/{method}.json",
    log:
        "logs/STUDY/tune/{method}.log",
    wildcard_constraints:
        method=wildcard_choices(STUDY_SECTION["methods"]),
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(1000, 4000), runtime=(10, 240)),
    params:
        study=STUDY_SECTION,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/STUDY_tune.py"


rule STUDY_run:
    input:
        tuning=STUDY_TUNING,
    output:
        metrics="results/STUDY/runs/seed{seed}/metrics.json",
    log:
        "logs/STUDY/run/seed{seed}.log",
    wildcard_constraints:
        seed=r"\\d+",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(1000, 4000), runtime=(10, 240)),
    params:
        study=STUDY_SECTION,
    script:
        "../scripts/STUDY_run.py"


register_study(
    "STUDY",
    runs=STUDY_RUNS,
    tuning=STUDY_TUNING,
    captions={
        "table": "STUDY: test MSE per method, mean ± std over seeds.",
        "curves": "STUDY: test MSE per method and seed (``x,series,y``).",
        "report": "The papermill report of the STUDY study.",
    },
    report_params={"methods": STUDY_SECTION["methods"]},
)
"""

_RUN_SCRIPT = '''"""Rule glue: every STUDY method on one seed, with its tuned values."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.core.tuning import selected
from reprolab.studies.STUDY.jobs import run_job

with job_log(snakemake.log[0]):
    run_job(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        selected(snakemake.input.tuning),
        Path(snakemake.output.metrics).parent,
    )
'''

_TUNE_SCRIPT = '''"""Rule glue: choose one STUDY method's values on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.STUDY.jobs import tune_method

with job_log(snakemake.log[0]):
    tune_method(
        dict(snakemake.params.study),
        snakemake.wildcards.method,
        list(snakemake.params.seeds),
        snakemake.output.tuned,
    )
'''

_PARAMS = """STUDY:
  methods: [ridge, mean]
  data:
    samples: 200                 # training samples; as many test samples
    features: 10
    noise: 1.0
  tune:                          # STUDY_tune: per method a grid, chosen on the tuning seeds
    grid:
      ridge: {ridge: [0.0, 0.1, 1.0, 10.0, 100.0]}   # 0: plain least squares
      mean: {}                   # nothing to tune
  claims:
    alpha: 0.05                  # one-sided paired t-test over seeds, fixed in advance
    method: ridge
    baseline: mean
    min_effect: 0.1              # MSE units, fixed before the run
  table_digits: 3
  scales:
    ci:
      data:
        samples: 50
    paper:
      data:
        samples: 100000
"""

_SCHEMA = """# params.yaml section `STUDY` (merged with its `scales` override before validation).
$schema: https://json-schema.org/draft/2020-12/schema
type: object
additionalProperties: false
required: [methods, data, tune, claims, table_digits]
properties:
  methods:
    type: array
    minItems: 2
    uniqueItems: true
    items: {enum: [ridge, mean]}
  tune:
    type: object
    additionalProperties: false
    required: [grid]
    properties:
      grid:
        description: per method, its values to try (an empty mapping tunes nothing)
        type: object
        additionalProperties: {type: object, additionalProperties: {type: array, minItems: 1}}
  data:
    type: object
    additionalProperties: false
    required: [samples, features, noise]
    properties:
      samples: {type: integer, minimum: 2}
      features: {type: integer, minimum: 1}
      noise: {type: number, minimum: 0}
  claims:
    type: object
    additionalProperties: false
    required: [alpha, method, baseline, min_effect]
    properties:
      alpha: {type: number, exclusiveMinimum: 0, exclusiveMaximum: 1}
      method: {enum: [ridge, mean]}
      baseline: {enum: [ridge, mean]}
      min_effect: {type: number, minimum: 0}
  table_digits: {type: integer, minimum: 0, maximum: 6}
  scales: {type: object}
"""

_TEST = """from pathlib import Path

import pytest

from reprolab.core.io import read_json
from reprolab.core.schemas import validate_claims
from reprolab.core.summary import summarize_study
from reprolab.core.tuning import selected
from reprolab.studies.STUDY.jobs import run_job, tune_method
from tests.conftest import study_section


@pytest.fixture
def params() -> dict:
    return study_section("STUDY", "ci")


@pytest.fixture
def tuning(params: dict, tmp_path: Path) -> list[Path]:
    paths = [tmp_path / "tuning" / f"{m}.json" for m in params["methods"]]
    for method, path in zip(params["methods"], paths, strict=True):
        tune_method(params, method, [1000], path)
    return paths


def test_summary_writes_every_contract_file(params: dict, tuning: list[Path], tmp_path: Path):
    seeds = [0, 1, 2]
    for seed in seeds:
        run_job(params, seed, selected(tuning), tmp_path / "runs" / f"seed{seed}")
    summarize_study("STUDY", params, seeds, tmp_path, tuning_files=tuning)
    for name in ("table.csv", "table.md", "table.tex", "claims.json", "metrics.json"):
        assert (tmp_path / name).is_file(), name
    claims = read_json(tmp_path / "claims.json")
    validate_claims(claims, "claims.json")
    assert claims["claims_counted"] == 1
    assert set(read_json(tmp_path / "metrics.json")["tuning"]) == set(params["methods"])


def test_same_seed_gives_the_same_run(params: dict, tuning: list[Path], tmp_path: Path):
    tuned = selected(tuning)
    assert run_job(params, 0, tuned, tmp_path / "a") == run_job(params, 0, tuned, tmp_path / "b")
"""

_DOC = """# STUDY

## The paper's question

(Two or three sentences from the abstract, in your words.)

## What the study builds

Data, method, baselines, metrics, the table's rows and columns, the claims checked.

## Choices the paper left open

## Departures from the design card

## Tuning

What the `STUDY_tune_method` jobs (target `STUDY_tune`) tune, on which seeds, and what it chose.

## Files

- `src/reprolab/studies/STUDY/`: jobs and results
- `workflow/rules/STUDY.smk`: job rules
- `workflow/notebooks/STUDY.ipynb`: the report
- `params.yaml`, section `STUDY`; schema `src/reprolab/schemas/studies/STUDY.schema.yaml`
"""
