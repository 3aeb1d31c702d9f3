"""Rule glue: hiccr's warm start, gated (the checkpoint every RL run starts from)."""

from reprolab.core.progress import job_log
from reprolab.studies.hiccr.jobs import warm_start

with job_log(snakemake.log[0]):
    warm_start(
        dict(snakemake.params.study),
        snakemake.params.stream,
        snakemake.output.model,
        snakemake.output.record,
        snakemake.threads,
    )
