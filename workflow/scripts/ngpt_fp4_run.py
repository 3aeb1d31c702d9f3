"""Rule glue: train one ngpt_fp4 architecture on one seed under every recipe."""

from reprolab.core.progress import job_log
from reprolab.studies.ngpt_fp4.jobs import run_job

with job_log(snakemake.log[0]):
    run_job(
        dict(snakemake.params.study),
        snakemake.wildcards.arch,
        int(snakemake.wildcards.seed),
        snakemake.input.tuning,
        snakemake.input.corpus,
        snakemake.output.metrics,
        snakemake.threads,
    )
