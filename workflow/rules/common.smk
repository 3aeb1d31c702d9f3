# Shared helpers for the study files: parameter access (one merge of base + scale override),
# the job seeds, the thread count per job and the CPU kernel level every job runs at.
import os

from reprolab.core.determinism import kernel_environment
from reprolab.core.layout import CONTRACT_FILES, known_studies, wildcard_choices
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


MAX_MEM_MB = 240_000
"""The most memory a job asks for, retried or not: fits the 256 GB nodes common on GPU
partitions."""
MAX_RUNTIME_MIN = 2880
"""The longest runtime a job asks for, retried or not: 48 h, within most partitions' limit."""


def job_resources(mem_mb, runtime, gpus=0):
    """What a job rule asks the scheduler for. `mem_mb` (MB) and `runtime` (minutes) are pairs
    (smoke and ci, paper), picked by the active scale, so a `ci` run on a cluster asks for
    ci-sized jobs; the one retry the cluster profile allows asks for twice as much, capped at
    MAX_MEM_MB and MAX_RUNTIME_MIN. `gpus` is asked at every scale (the test cluster offers a
    fake GPU; the profile sends these rules to the GPU partition); a local run is not limited by
    it."""
    at_paper = SCALE == "paper"
    memory, minutes = mem_mb[at_paper], runtime[at_paper]
    needs = {
        "mem_mb": lambda wildcards, attempt: min(memory * attempt, MAX_MEM_MB),
        "runtime": lambda wildcards, attempt: min(minutes * attempt, MAX_RUNTIME_MIN),
    }
    if gpus:
        needs["gpu"] = gpus
    return needs


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
    seeds=None,
):
    """Register a study's tail: `runs` are the files its summary reads (results/<id>/runs and
    any other job output); `captions` the Snakemake-report captions of its table, curves and
    report (keys "table", "curves", "report"); `report_params` the notebook parameters beyond
    results_dir, seeds and scale; `report_inputs` files the notebook reads besides the
    summary and runs; `provenance_values` the params recorded in provenance.json (the
    study's section by default; add a preprocessing family's section when its data is read);
    `tuning` the records its `<id>_tune` rule writes (data/<id>/tuning/, reprolab.core.tuning),
    summarized into metrics.json and drawn in the report; `seeds` the evaluation seeds its
    runs use when they are not all of params `seeds` (a compute-bound study's first few).
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
        "seeds": list(SEEDS if seeds is None else seeds),
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


# Paper-scale data (reprolab.core.paper_data): the datasets and checkpoints paper-scale jobs read
# are declared inputs, so a run without them stops before any job, naming each; the main process
# (not each cluster job, which parses this file again) also prints them with how to obtain them.
import sys

from reprolab.core.paper_data import (
    WSI_ENCODER,
    declared_inputs,
    inputs_of,
    missing_report,
)

PAPER_INPUTS = declared_inputs(config)
PAPER_MISSING = missing_report(PAPER_INPUTS) if workflow.is_main_process else ""
if PAPER_MISSING:
    print(PAPER_MISSING, file=sys.stderr)


def paper_inputs(owner, *keys):
    """The paper-scale files a job of `owner` (a study or preprocessing family) reads for the
    entries `keys` (its task, cohort, dataset, stream or method; WSI_ENCODER for the wsi tile
    encoder): an item of the job rule's `input:`. Empty at smoke and ci scale."""
    return inputs_of(PAPER_INPUTS, owner, *keys)
