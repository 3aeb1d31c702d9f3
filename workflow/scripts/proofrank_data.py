"""Rule glue: read the proofrank corpus, record the lines it could not read, write it as one
JSONL file."""

from reprolab.core.progress import job_log
from reprolab.studies.proofrank.jobs import write_data

with job_log(snakemake.log[0]):
    write_data(
        dict(snakemake.params.study),
        snakemake.input.tuned,
        snakemake.output.corpus,
        snakemake.output.report,
    )
