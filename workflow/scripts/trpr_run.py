"""Rule glue: one seed of the trpr study on one benchmark: every row through the seed's stream,
with the values the trpr_tune jobs selected."""

from reprolab.core.progress import job_log
from reprolab.studies.trpr.jobs import run_seed

with job_log(snakemake.log[0]):
    run_seed(
        dict(snakemake.params.study),
        snakemake.wildcards.benchmark,
        int(snakemake.wildcards.seed),
        snakemake.input.backbone,
        snakemake.input.images,
        list(snakemake.input.tuning),
        snakemake.output.metrics,
        snakemake.threads,
    )
