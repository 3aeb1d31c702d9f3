"""Rule glue: the bilevel_ht table, claim checks, metrics and F curves from all jobs."""

from pathlib import Path

from reprolab.core.io import write_csv
from reprolab.core.progress import job_log
from reprolab.studies.bilevel_ht.results import curve_rows, load_curves, summarize_study

with job_log(snakemake.log[0]):
    study, seeds = dict(snakemake.params.study), list(snakemake.params.seeds)
    summarize_study(
        study,
        seeds,
        runs_dir="results/bilevel_ht/runs",
        out_dir=Path(snakemake.output.table).parent,
    )
    curves = load_curves(study, seeds, "results/bilevel_ht/runs")
    write_csv(snakemake.output.curves, curve_rows(study, curves))
