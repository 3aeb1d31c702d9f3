"""Rule glue: nas's fact world and the GPT-2 trained on it, the model every run edits."""

from reprolab.core.io import write_json
from reprolab.core.progress import job_log
from reprolab.studies.nas.jobs import train_lm

with job_log(snakemake.log[0]):
    record = train_lm(
        dict(snakemake.params.study),
        snakemake.output.model,
        snakemake.output.world,
        snakemake.threads,
    )
    write_json(snakemake.output.record, record)
