"""Rule glue: every pem method on every source setting at one noise level, for one seed, with
the values the pem_tune jobs selected."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.pem.jobs import run_job

with job_log(snakemake.log[0]):
    run_job(
        float(snakemake.params.snr_db),
        int(snakemake.wildcards.seed),
        dict(snakemake.params.study),
        snakemake.threads,
        Path(snakemake.output.metrics).parent,
        list(snakemake.input.tuning),
    )
