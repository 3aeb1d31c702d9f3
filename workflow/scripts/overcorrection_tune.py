"""Rule glue: MMR's lambda and the theory rule of one overcorrection reader, per channel, chosen
on the tuning seeds."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.overcorrection.jobs import tune_job

with job_log(snakemake.log[0]):
    tune_job(
        dict(snakemake.params.study),
        snakemake.wildcards.reader,
        dict(zip(snakemake.params.seeds, snakemake.input.weights, strict=True)),
        Path(snakemake.output.tuned[0]).parent,
        snakemake.threads,
    )
