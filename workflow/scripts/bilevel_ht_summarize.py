"""Rule glue: the bilevel_ht table, claim checks and metrics from all jobs."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.bilevel_ht.results import summarize_study

with job_log(snakemake.log[0]):
    summarize_study(
        dict(snakemake.params.study),
        list(snakemake.params.seeds),
        runs_dir="results/bilevel_ht/runs",
        out_dir=Path(snakemake.output.table).parent,
    )
