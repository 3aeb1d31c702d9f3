"""Rule glue: write results/index.html."""

from reprolab.core.index import write_index
from reprolab.core.progress import job_log

with job_log(snakemake.log[0]):
    write_index(
        list(snakemake.params.studies),
        snakemake.params.scale,
        snakemake.output.html,
        papers=snakemake.input.papers,
    )
