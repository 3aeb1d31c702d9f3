"""Rule glue: MMR's lambda and the theory rule of one overcorrection reader, per channel, chosen
on the tuning seeds."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.overcorrection.jobs import tune_job

with job_log(snakemake.log[0]):
    seeds, weights = list(snakemake.params.seeds), list(snakemake.input.weights)
    tune_job(
        dict(snakemake.params.study),
        snakemake.wildcards.reader,
        seeds,
        dict(zip(seeds, weights, strict=True)) if weights else {},
        Path(snakemake.output.tuned[0]).parent,
        snakemake.threads,
    )
