"""Rule glue: the pem table, claim checks and metrics from all runs."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.pem.results import summarize_study

with job_log(snakemake.log[0]):
    summarize_study(
        dict(snakemake.params.study),
        list(snakemake.params.seeds),
        runs_dir="results/pem/runs",
        out_dir=Path(snakemake.output.table).parent,
    )
