"""Rule glue: train one (task, method, seed) run of the ndfa study."""

from reprolab.core.progress import job_log
from reprolab.studies.ndfa.storage import read_split, write_run
from reprolab.studies.ndfa.train import train_run

with job_log(snakemake.log[0]):
    p = snakemake.params
    result = train_run(
        dict(p.task),
        snakemake.wildcards.method,
        dict(p.train),
        dict(p.surrogate),
        read_split(snakemake.input.split),
        int(snakemake.wildcards.seed),
        snakemake.threads,
    )
    write_run(snakemake.output.metrics, snakemake.output.curves, result)
