"""Rule glue: train and score every ntm row on one dataset and seed."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.ntm.jobs import run_job

with job_log(snakemake.log[0]):
    w = snakemake.wildcards
    run_job(
        dict(snakemake.params.study),
        list(snakemake.input.tuning),
        w.ntm_dataset,
        int(w.seed),
        Path(snakemake.output.metrics).parent,
        snakemake.threads,
    )
