"""Rule glue: choose one icl_manifold network's learning rate on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.icl_manifold.jobs import tune_network

with job_log(snakemake.log[0]):
    tune_network(
        dict(snakemake.params.study),
        snakemake.wildcards.method,
        list(snakemake.params.tuning_seeds),
        snakemake.threads,
        snakemake.output.tuned,
    )
