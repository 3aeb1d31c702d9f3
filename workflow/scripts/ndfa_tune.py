"""Rule glue: tune one (task, method) of the ndfa study on the tuning seeds' splits."""

from reprolab.core.progress import job_log
from reprolab.core.tuning import write_tuning
from reprolab.studies.ndfa.jobs import tune_method
from reprolab.studies.ndfa.storage import read_split

with job_log(snakemake.log[0]):
    p = snakemake.params
    seeds = [int(s) for s in p.seeds]
    record = tune_method(
        snakemake.wildcards.task,
        dict(p.task),
        snakemake.wildcards.method,
        dict(p.train),
        dict(p.surrogate),
        dict(p.tune),
        {s: read_split(path) for s, path in zip(seeds, snakemake.input.splits, strict=True)},
        snakemake.threads,
    )
    if record["on_edge"]:
        print(f"warning: selected value on the grid's edge for {record['on_edge']}")
    print(f"selected {record['selected']} ({record['metric']} {record['score']:.2f})")
    write_tuning(snakemake.output.tuning, record)
