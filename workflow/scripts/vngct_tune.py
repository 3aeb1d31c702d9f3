"""Rule glue: tune one vngct method's hyperparameters on the tuning seeds (held-out items)."""

from reprolab.core.progress import job_log
from reprolab.core.tuning import read_tuning, write_tuning
from reprolab.studies.vngct.tune import tune_method

with job_log(snakemake.log[0]):
    p = snakemake.params
    matched = snakemake.input.get("matched")
    record = tune_method(
        snakemake.wildcards.method,
        p.stream,
        snakemake.input.get("model", p.study["checkpoint"]),
        dict(p.study),
        [int(s) for s in p.tuning_seeds],
        snakemake.threads,
        read_tuning(matched) if matched else None,
    )
    if record["on_edge"]:
        print(f"warning: selected value on the grid's edge for {record['on_edge']}")
    print(f"selected {record['selected']} ({record['metric']} {record['score']:.3f})")
    write_tuning(snakemake.output.tuning, record)
