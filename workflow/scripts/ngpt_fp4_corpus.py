"""Rule glue: write ngpt_fp4's corpus file (the stdlib docstrings, or a folder's text)."""

from reprolab.core.progress import job_log
from reprolab.studies.ngpt_fp4.corpus import write_study_corpus

with job_log(snakemake.log[0]):
    write_study_corpus(dict(snakemake.params.corpus), snakemake.output.corpus)
