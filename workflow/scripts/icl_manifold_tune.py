"""Rule glue: choose the classical estimators' hyperparameters of one icl_manifold setting."""

from reprolab.core.progress import job_log
from reprolab.studies.icl_manifold.jobs import tune_setting

with job_log(snakemake.log[0]):
    tune_setting(
        dict(snakemake.params.study),
        snakemake.wildcards.setting,
        list(snakemake.params.tuning_seeds),
        snakemake.output.tuned,
    )
