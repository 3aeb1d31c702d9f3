# Shared helpers for the study files: parameter access (one merge of base + scale override),
# the job seeds, the thread count per job and the CPU kernel level every job runs at.
import os

from reprolab.core.determinism import kernel_environment
from reprolab.core.layout import CONTRACT_FILES, known_studies
from reprolab.core.params import check_config, merged_top_level, study_params

check_config(config, "workflow/schemas/params.schema.yaml", known_studies())
TOP = merged_top_level(config)
SEEDS = TOP["seeds"]
THREADS = TOP["threads"]
SCALE = config["scale"]
# Jobs inherit this process's environment (locally, and on SLURM where each job re-reads this
# file), so pinning here pins every job before torch or MKL load.
os.environ.update(kernel_environment(TOP["cpu_kernels"]))


def section(study):
    """The study's params at the active scale."""
    return study_params(config, study)


def contract_outputs(study):
    """The result files every study writes (the study contract in DESIGN.md)."""
    return [f"results/{study}/{name}" for name in CONTRACT_FILES]


def study_target(study):
    """What `snakemake <study>` and so `dvc repro <study>` build: the contract files and every
    file the study's summary reads. Snakemake does not rebuild a missing intermediate file whose
    readers are complete, so without the runs here a run deleted by a killed job would stay
    missing and DVC would record a partial runs folder."""
    return [*contract_outputs(study), *getattr(rules, f"{study}_summarize").input]
