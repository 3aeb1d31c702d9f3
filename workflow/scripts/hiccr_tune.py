"""Rule glue: one base algorithm's learning rate of the hiccr study, on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.hiccr.jobs import tune_base

with job_log(snakemake.log[0]):
    tune_base(
        dict(snakemake.params.study),
        snakemake.wildcards.base,
        list(snakemake.params.seeds),
        snakemake.params.stream,
        snakemake.input.model,
        snakemake.output.tuning,
        snakemake.threads,
    )
