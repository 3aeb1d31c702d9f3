"""Rule glue: lift and score every normlift row on one scene, with the tuned settings."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.normlift.jobs import run_job

with job_log(snakemake.log[0]):
    run_job(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        snakemake.input.scene,
        list(snakemake.input.tuning),
        Path(snakemake.output.metrics).parent,
        snakemake.threads,
    )
