"""Rule glue: every overcorrection reader, channel, selector and k on one seed."""

from reprolab.core.progress import job_log
from reprolab.core.tuning import selected
from reprolab.studies.overcorrection.jobs import run_job

with job_log(snakemake.log[0]):
    readers = list(snakemake.params.study["readers"])
    run_job(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        dict(zip(readers, snakemake.input.weights, strict=True)),
        dict(zip(readers, snakemake.input.records, strict=True)),
        selected(snakemake.input.tuned),
        snakemake.output.metrics,
        snakemake.threads,
    )
