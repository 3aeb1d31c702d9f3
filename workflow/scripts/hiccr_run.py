"""Rule glue: one method and seed of the hiccr study: RL from the warm start at the tuned
learning rate of the method's base algorithm, then the test metrics."""

from reprolab.core.progress import job_log
from reprolab.studies.hiccr.jobs import run_seed

with job_log(snakemake.log[0]):
    run_seed(
        dict(snakemake.params.study),
        snakemake.wildcards.method,
        int(snakemake.wildcards.seed),
        snakemake.params.stream,
        snakemake.input.model,
        snakemake.input.sft_record,
        list(snakemake.input.tuning),
        snakemake.output.metrics,
        snakemake.output.curves,
        snakemake.threads,
    )
