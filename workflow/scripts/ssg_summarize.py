"""Rule glue: the ssg table, claim checks and metrics from all runs."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.ssg.results import summarize_study

with job_log(snakemake.log[0]):
    summarize_study(
        dict(snakemake.params.study),
        list(snakemake.params.seeds),
        runs_dir="results/ssg/runs",
        out_dir=Path(snakemake.output.table).parent,
    )
