"""Rule glue: the pem table, claim checks, metrics and online PEM's SINR curves."""

from pathlib import Path

from reprolab.core.io import write_csv
from reprolab.core.progress import job_log
from reprolab.studies.pem.results import curve_rows, load_runs, summarize_study

with job_log(snakemake.log[0]):
    study, seeds = dict(snakemake.params.study), list(snakemake.params.seeds)
    summarize_study(
        study,
        seeds,
        runs_dir="results/pem/runs",
        out_dir=Path(snakemake.output.table).parent,
    )
    runs = load_runs(study, seeds, "results/pem/runs")
    write_csv(snakemake.output.curves, curve_rows(study, runs))
