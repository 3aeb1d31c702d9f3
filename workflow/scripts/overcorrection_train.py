"""Rule glue: train one overcorrection reader on one seed's prior."""

from reprolab.core.progress import job_log
from reprolab.studies.overcorrection.jobs import train_job

with job_log(snakemake.log[0]):
    train_job(
        dict(snakemake.params.study),
        snakemake.wildcards.reader,
        int(snakemake.wildcards.seed),
        snakemake.output.weights,
        snakemake.output.record,
        snakemake.threads,
    )
