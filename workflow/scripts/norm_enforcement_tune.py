"""Rule glue: tune every fined mechanism's base fine in one norm_enforcement environment."""

from reprolab.core.progress import job_log
from reprolab.studies.norm_enforcement.tune import tune_environment

with job_log(snakemake.log[0]):
    tune_environment(
        dict(snakemake.params.study),
        snakemake.wildcards.environment,
        list(snakemake.params.seeds),
        dict(zip(snakemake.params.mechanisms, snakemake.output.tuned, strict=True)),
    )
