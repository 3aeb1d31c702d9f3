"""Rule glue: the vngct table, claim checks and metrics from all runs."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.vngct.results import summarize_study

with job_log(snakemake.log[0]):
    study = dict(snakemake.params.study)
    summarize_study(
        list(study["methods"]),
        list(snakemake.params.seeds),
        float(study["claims"]["alpha"]),
        int(study["table_digits"]),
        runs_dir="results/vngct/runs",
        out_dir=Path(snakemake.output.table).parent,
    )
