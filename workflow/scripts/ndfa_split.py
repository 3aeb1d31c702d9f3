"""Rule glue: build one (task, seed) data split of the ndfa study."""

from reprolab.core.progress import job_log
from reprolab.studies.ndfa.data import load_task
from reprolab.studies.ndfa.storage import write_split

with job_log(snakemake.log[0]):
    write_split(
        snakemake.output.split,
        load_task(dict(snakemake.params.task), int(snakemake.wildcards.seed)),
    )
