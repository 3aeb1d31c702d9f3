"""Rule glue: write one trpr benchmark's images (DigitStyles generated, or a release read)."""

from reprolab.core.progress import job_log
from reprolab.studies.trpr.jobs import write_benchmark

with job_log(snakemake.log[0]):
    write_benchmark(
        snakemake.wildcards.benchmark, dict(snakemake.params.spec), snakemake.output.images
    )
