"""Rule glue: one edit-stream seed of the nas study, edited by every method."""

from reprolab.core.progress import job_log
from reprolab.studies.nas.jobs import run_seed

with job_log(snakemake.log[0]):
    run_seed(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        snakemake.params.study["model"] or snakemake.input.model,
        snakemake.input.get("world"),
        snakemake.input.tuned,
        snakemake.output.metrics,
        snakemake.threads,
    )
