# Shared helpers for the study files: parameter access (one merge of base + scale override),
# the job seeds, the thread count per job and the CPU kernel level every job runs at.
import os

from reprolab.core.determinism import kernel_environment
from reprolab.core.layout import CONTRACT_FILES, known_studies
from reprolab.core.params import check_config, merged_top_level, study_params

check_config(config, known_studies(), source=" + ".join(map(str, workflow.configfiles)))
TOP = merged_top_level(config)
SEEDS = TOP["seeds"]
TUNING_SEEDS = TOP["tuning_seeds"]
THREADS = TOP["threads"]
SCALE = config["scale"]
# Jobs inherit this process's environment (locally, and on SLURM where each job re-reads this
# file), so pinning here pins every job before torch or MKL load.
os.environ.update(kernel_environment(TOP["cpu_kernels"]))


def section(study):
    """The study's params at the active scale."""
    return study_params(config, study)


def contract_outputs(study):
    """The result files every study writes (the study contract in docs/architecture.md)."""
    return [f"results/{study}/{name}" for name in CONTRACT_FILES]


STUDY_TAILS = {}
"""What each study registers for the rules every study shares (workflow/rules/tail.smk)."""


def register_study(
    study,
    runs,
    captions,
    report_params=None,
    report_inputs=None,
    provenance_values=None,
    tuning=(),
):
    """Register a study's tail: `runs` are the files its summary reads (results/<id>/runs and
    any other job output); `captions` the Snakemake-report captions of its table, curves and
    report (keys "table", "curves", "report"); `report_params` the notebook parameters beyond
    results_dir, seeds and scale; `report_inputs` files the notebook reads besides the
    summary and runs; `provenance_values` the params recorded in provenance.json (the
    study's section by default; add a preprocessing family's section when its data is read);
    `tuning` the records its `<id>_tune` rule writes (data/<id>/tuning/, reprolab.core.tuning),
    summarized into metrics.json and drawn in the report.
    """
    STUDY_TAILS[study] = {
        "runs": list(runs),
        "tuning": list(tuning),
        "captions": dict(captions),
        "report_params": dict(report_params or {}),
        "report_inputs": dict(report_inputs or {}),
        "provenance_values": (
            provenance_values if provenance_values is not None else section(study)
        ),
    }


def tuning_outputs(study):
    """Every file the study's tuning jobs write (data/<id>/tuning/): the input of the
    `<id>_tune` target that tail.smk adds, so `snakemake <id>_tune` runs them all (a job rule
    with wildcards cannot be a target itself)."""
    tail = STUDY_TAILS[study]
    prefix = f"data/{study}/tuning/"
    return [f for f in [*tail["runs"], *tail["tuning"]] if f.startswith(prefix)]


def fragility_record(study):
    """The study's record of a run at a second CPU kernel level (reprolab fragility), read by
    its summary when there is one: an input only where it exists."""
    path = f"results/{study}/fragility.json"
    return [path] if os.path.exists(path) else []


def study_target(study):
    """What `snakemake <study>` and so `dvc repro <study>` build: the contract files and every
    file the study's summary reads. Snakemake does not rebuild a missing intermediate file whose
    readers are complete, so without the runs here a run deleted by a killed job would stay
    missing and DVC would record a partial runs folder."""
    tail = STUDY_TAILS[study]
    return [*contract_outputs(study), *tail["runs"], *tail["tuning"]]
