"""Rule glue: the vngct table, claim checks, metrics and accuracy curves from all runs."""

from pathlib import Path

from reprolab.core.io import write_csv
from reprolab.core.progress import job_log
from reprolab.studies.vngct.results import curve_rows, load_runs, summarize_study

with job_log(snakemake.log[0]):
    study, seeds = dict(snakemake.params.study), list(snakemake.params.seeds)
    summarize_study(
        list(study["methods"]),
        seeds,
        float(study["claims"]["alpha"]),
        int(study["table_digits"]),
        runs_dir="results/vngct/runs",
        out_dir=Path(snakemake.output.table).parent,
    )
    runs = load_runs(list(study["methods"]), seeds, "results/vngct/runs")
    write_csv(snakemake.output.curves, curve_rows(runs))
