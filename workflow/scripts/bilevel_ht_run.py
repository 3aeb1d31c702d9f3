"""Rule glue: run every noise setting and method of one (dataset, topology, seed) job at the
step sizes of the methods' tuning records."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.bilevel_ht.jobs import run_job

with job_log(snakemake.log[0]):
    w = snakemake.wildcards
    run_job(
        dict(snakemake.params.study),
        list(snakemake.input.tuning),
        w.bht_dataset,
        w.bht_topology,
        int(w.seed),
        Path(snakemake.output.metrics).parent,
        snakemake.threads,
    )
