"""Rule glue: train the networks and evaluate every method for one icl_manifold seed."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.core.tuning import selected
from reprolab.studies.icl_manifold.jobs import evaluate_seed, read_tuning

with job_log(snakemake.log[0]):
    evaluate_seed(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        read_tuning(snakemake.input.tuning),
        selected(snakemake.input.networks),
        snakemake.threads,
        Path(snakemake.output.errors).parent,
    )
