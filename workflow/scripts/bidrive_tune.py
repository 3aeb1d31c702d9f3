"""Rule glue: tune one bidrive planner's learning rate on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.bidrive.tune import tune_model

with job_log(snakemake.log[0]):
    tune_model(
        dict(snakemake.params.study),
        snakemake.wildcards.bidrive_model,
        list(snakemake.params.seeds),
        snakemake.output.tuned,
        snakemake.threads,
    )
