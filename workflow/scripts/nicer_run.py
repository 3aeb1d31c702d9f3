"""Rule glue: one seed of the nicer study: every row condensed at every budget and classified,
with the values the nicer_tune jobs selected."""

from reprolab.core.progress import job_log
from reprolab.studies.nicer.jobs import run_seed

with job_log(snakemake.log[0]):
    run_seed(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        snakemake.input.features,
        snakemake.input.labels,
        list(snakemake.input.tuning),
        snakemake.output.metrics,
        snakemake.output.condensed,
        snakemake.threads,
    )
