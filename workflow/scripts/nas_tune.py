"""Rule glue: nas's covariance weight and ridge, tuned for plain MEMIT on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.nas.tune import tune_editing

with job_log(snakemake.log[0]):
    tune_editing(
        dict(snakemake.params.study),
        snakemake.params.study["model"] or snakemake.input.model,
        snakemake.input.get("world"),
        list(snakemake.params.seeds),
        snakemake.output.tuned,
        snakemake.threads,
    )
