"""Rule glue: one evaluation seed of proofrank: discriminant validity and the harness."""

from reprolab.core.progress import job_log
from reprolab.studies.proofrank.jobs import lm_dirs_of, run_seed

with job_log(snakemake.log[0]):
    run_seed(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        snakemake.input.corpus,
        snakemake.input.tuned,
        lm_dirs_of(list(snakemake.params.lms), list(snakemake.input.lms)),
        snakemake.output.metrics,
        snakemake.threads,
    )
