"""Rule glue: the icl_manifold table, rate slopes, claim checks, metrics and error curves."""

from pathlib import Path

from reprolab.core.io import write_csv
from reprolab.core.progress import job_log
from reprolab.studies.icl_manifold.results import curve_rows, load_runs, summarize_study

with job_log(snakemake.log[0]):
    study, seeds = dict(snakemake.params.study), list(snakemake.params.seeds)
    summarize_study(
        study,
        seeds,
        runs_dir="results/icl_manifold/runs",
        tuning_dir="data/icl_manifold/tuning",
        out_dir=Path(snakemake.output.table).parent,
    )
    runs = load_runs(study, seeds, "results/icl_manifold/runs")
    write_csv(snakemake.output.curves, curve_rows(study, runs))
