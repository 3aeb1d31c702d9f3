"""Rule glue: the icl_manifold table, rate slopes, claim checks and metrics from all runs."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.icl_manifold.results import summarize_study

with job_log(snakemake.log[0]):
    summarize_study(
        dict(snakemake.params.study),
        list(snakemake.params.seeds),
        runs_dir="results/icl_manifold/runs",
        tuning_dir="data/icl_manifold/tuning",
        out_dir=Path(snakemake.output.table).parent,
    )
