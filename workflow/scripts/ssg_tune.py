"""Rule glue: tune one method of the ssg study on the tuning seeds' training bags."""

from reprolab.core.progress import job_log
from reprolab.core.tuning import write_tuning
from reprolab.studies.ssg.jobs import tune_dataset

with job_log(snakemake.log[0]):
    p = snakemake.params
    params = {"model": dict(p.model), "train": dict(p.train), "tune": dict(p.tune)}
    record = tune_dataset(
        dict(p.spec),
        dict(p.wsi),
        snakemake.wildcards.method,
        params,
        [int(s) for s in p.seeds],
        snakemake.threads,
    )
    if record["on_edge"]:
        print(f"warning: selected value on the grid's edge for {record['on_edge']}")
    print(f"selected {record['selected']} ({record['metric']} {record['score']:.4f})")
    write_tuning(snakemake.output.tuning, record)
