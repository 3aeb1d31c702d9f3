"""Rule glue: one vngct method tunes a model (the seed's aligned one, or the checkpoint) through
the stream, with the values its tuning record selected."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.core.tuning import read_tuning
from reprolab.studies.vngct.jobs import run_method

with job_log(snakemake.log[0]):
    run_method(
        snakemake.wildcards.method,
        snakemake.params.stream,
        snakemake.input.get("model", snakemake.params.study["checkpoint"]),
        int(snakemake.wildcards.seed),
        dict(snakemake.params.study),
        snakemake.threads,
        Path(snakemake.output.metrics).parent,
        snakemake.input.get("matched"),
        tuning=read_tuning(snakemake.input.tuning),
    )
