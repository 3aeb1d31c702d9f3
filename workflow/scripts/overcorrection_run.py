"""Rule glue: every overcorrection reader, channel, selector and k on one seed."""

from reprolab.core.progress import job_log
from reprolab.core.tuning import selected
from reprolab.studies.overcorrection.jobs import run_job
from reprolab.studies.overcorrection.workflow_io import trained_readers

with job_log(snakemake.log[0]):
    readers = trained_readers(snakemake.params.study)
    run_job(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        dict(zip(readers, snakemake.input.weights, strict=True)),
        dict(zip(readers, snakemake.input.records, strict=True)),
        selected(snakemake.input.tuned),
        snakemake.output.metrics,
        snakemake.threads,
    )
