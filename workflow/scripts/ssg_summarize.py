"""Rule glue: the ssg table, claim checks, metrics and learning curves from all runs."""

from pathlib import Path

from reprolab.core.io import write_csv
from reprolab.core.progress import job_log
from reprolab.studies.ssg.results import curve_rows, load_curves, summarize_study

with job_log(snakemake.log[0]):
    summarize_study(
        dict(snakemake.params.study),
        list(snakemake.params.seeds),
        runs_dir="results/ssg/runs",
        out_dir=Path(snakemake.output.table).parent,
    )
    curves = load_curves(
        dict(snakemake.params.study), list(snakemake.params.seeds), "results/ssg/runs"
    )
    write_csv(snakemake.output.curves, curve_rows(curves))
