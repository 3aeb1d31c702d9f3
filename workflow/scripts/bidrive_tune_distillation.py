"""Rule glue: select bidrive's distillation learning rate from the tuning seeds' scores."""

from reprolab.core.progress import job_log
from reprolab.studies.bidrive.tune import tune_distillation

with job_log(snakemake.log[0]):
    tune_distillation(
        dict(snakemake.params.study), list(snakemake.input.scores), snakemake.output.tuned
    )
