"""Rule glue: train every bidrive planner of one seed and score its plans."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.bidrive.jobs import run_job

with job_log(snakemake.log[0]):
    run_job(
        dict(snakemake.params.study),
        list(snakemake.input.tuning),
        int(snakemake.wildcards.seed),
        Path(snakemake.output.metrics).parent,
        snakemake.threads,
    )
