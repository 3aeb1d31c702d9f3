"""Rule glue: tune one bilevel_ht method's step size on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.bilevel_ht.tune import tune_method

with job_log(snakemake.log[0]):
    tune_method(
        dict(snakemake.params.study),
        snakemake.wildcards.bht_method,
        list(snakemake.params.seeds),
        snakemake.output.tuned,
        snakemake.threads,
    )
