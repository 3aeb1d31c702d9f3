"""Rule glue: measure one ngpt_fp4 architecture's quantised dot products across hidden sizes."""

from reprolab.core.progress import job_log
from reprolab.studies.ngpt_fp4.jobs import mechanism_job

with job_log(snakemake.log[0]):
    mechanism_job(
        dict(snakemake.params.study),
        snakemake.wildcards.arch,
        int(snakemake.wildcards.seed),
        snakemake.input.tuning,
        snakemake.input.corpus,
        snakemake.output.mechanism,
        snakemake.threads,
    )
