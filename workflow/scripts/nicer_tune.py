"""Rule glue: choose one nicer row's values on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.nicer.tune import tune_row

with job_log(snakemake.log[0]):
    tune_row(
        dict(snakemake.params.study),
        snakemake.wildcards.row,
        list(snakemake.params.seeds),
        snakemake.input.features,
        snakemake.input.labels,
        snakemake.output.tuned,
        snakemake.threads,
    )
