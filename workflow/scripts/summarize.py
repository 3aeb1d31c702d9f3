"""Rule glue: a study's table, claims, metrics and curves (reprolab.core.summary)."""

from reprolab.core.progress import job_log
from reprolab.core.summary import summarize_study

with job_log(snakemake.log[0]):
    summarize_study(
        snakemake.params.study,
        dict(snakemake.params.section),
        list(snakemake.params.seeds),
        tuning_files=list(snakemake.input.tuning),
    )
