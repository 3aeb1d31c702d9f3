"""Rule glue: tune one ngpt_fp4 architecture's learning rate on the tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.ngpt_fp4.tune import tune_arch

with job_log(snakemake.log[0]):
    tune_arch(
        dict(snakemake.params.study),
        snakemake.wildcards.arch,
        list(snakemake.params.seeds),
        snakemake.input.corpus,
        snakemake.output.tuned,
        snakemake.threads,
    )
