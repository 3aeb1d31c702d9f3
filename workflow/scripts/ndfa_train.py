"""Rule glue: train one (task, method, seed) run of the ndfa study with its tuned values."""

from reprolab.core.progress import job_log
from reprolab.core.tuning import read_tuning
from reprolab.studies.ndfa.jobs import tuned_config
from reprolab.studies.ndfa.storage import read_split, write_run
from reprolab.studies.ndfa.train import train_run

with job_log(snakemake.log[0]):
    p = snakemake.params
    task, method = snakemake.wildcards.task, snakemake.wildcards.method
    train, surrogate = tuned_config(
        read_tuning(snakemake.input.tuning), task, method, dict(p.train), dict(p.surrogate)
    )
    result = train_run(
        dict(p.task),
        method,
        train,
        surrogate,
        read_split(snakemake.input.split),
        int(snakemake.wildcards.seed),
        snakemake.threads,
    )
    write_run(snakemake.output.metrics, snakemake.output.curves, result)
