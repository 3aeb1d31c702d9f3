"""Rule glue: one tuning seed's validation scores of bidrive's distillation learning rates."""

from reprolab.core.progress import job_log
from reprolab.studies.bidrive.tune import distillation_scores

with job_log(snakemake.log[0]):
    distillation_scores(
        dict(snakemake.params.study),
        int(snakemake.wildcards.tuning_seed),
        list(snakemake.input.models),
        snakemake.output.scores,
        snakemake.threads,
    )
