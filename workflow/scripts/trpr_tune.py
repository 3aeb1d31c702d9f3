"""Rule glue: choose one trpr row's values on one benchmark on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.trpr.tune import tune_row

with job_log(snakemake.log[0]):
    tune_row(
        dict(snakemake.params.study),
        snakemake.wildcards.benchmark,
        snakemake.wildcards.row,
        list(snakemake.params.seeds),
        snakemake.input.backbone,
        snakemake.input.images,
        list(snakemake.input.rate),
        snakemake.output.tuned,
        snakemake.threads,
    )
