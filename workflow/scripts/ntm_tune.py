"""Rule glue: tune one ntm method's learning rate on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.ntm.tune import tune_method

with job_log(snakemake.log[0]):
    tune_method(
        dict(snakemake.params.study),
        snakemake.wildcards.ntm_method,
        list(snakemake.params.seeds),
        snakemake.output.tuned,
        snakemake.threads,
        list(snakemake.input.teacher),
    )
