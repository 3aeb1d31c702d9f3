"""Rule glue: play every norm_enforcement episode of one seed, with the tuned fines."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.norm_enforcement.jobs import run_job

with job_log(snakemake.log[0]):
    run_job(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        list(snakemake.input.tuning),
        Path(snakemake.output.metrics).parent,
    )
