"""Rule glue: choose one normlift row's settings on the tuning scenes."""

from reprolab.core.progress import job_log
from reprolab.studies.normlift.tune import tune_method

with job_log(snakemake.log[0]):
    tune_method(
        dict(snakemake.params.study),
        snakemake.wildcards.method,
        list(snakemake.params.seeds),
        list(snakemake.input.scenes),
        snakemake.output.tuned,
        snakemake.threads,
    )
