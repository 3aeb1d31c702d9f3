"""Rule glue: generate a cohort of synthetic slides with their ground truth."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.preprocess.wsi.synth import cohort_specs, write_cohort

with job_log(snakemake.log[0]):
    specs = cohort_specs(dict(snakemake.params.synth), int(snakemake.params.seed))
    write_cohort(specs, Path(snakemake.output.manifest).parent)
