"""Rule glue: choose one pem method's hyperparameters on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.pem.tune import tune_method

with job_log(snakemake.log[0]):
    tune_method(
        dict(snakemake.params.study),
        snakemake.wildcards.method,
        list(snakemake.params.seeds),
        snakemake.output.tuned,
        upstream=list(snakemake.input.upstream),
        threads=snakemake.threads,
    )
