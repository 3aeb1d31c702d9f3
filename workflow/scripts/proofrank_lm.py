"""Rule glue: train one of proofrank's small language models on the corpus."""

from reprolab.core.progress import job_log
from reprolab.studies.proofrank.jobs import train_backend

with job_log(snakemake.log[0]):
    train_backend(
        dict(snakemake.params.study),
        snakemake.wildcards.backend,
        snakemake.input.corpus,
        snakemake.output.model,
        snakemake.threads,
    )
