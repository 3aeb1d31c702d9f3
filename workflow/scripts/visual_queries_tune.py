"""Rule glue: tune one visual_queries model on the tuning seeds' validation items."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.core.tuning import write_tuning
from reprolab.studies.visual_queries.dataset import load_corpus
from reprolab.studies.visual_queries.tune import tune_method

with job_log(snakemake.log[0]):
    corpus = load_corpus(
        Path(snakemake.input.annotations).parent,
        snakemake.input.frames,
        dict(snakemake.params.scene),
    )
    record = tune_method(
        snakemake.wildcards.method,
        corpus,
        dict(snakemake.params.study),
        [int(s) for s in snakemake.params.seeds],
        [int(s) for s in snakemake.params.eval_seeds],
        snakemake.threads,
    )
    if record["on_edge"]:
        print(f"warning: selected value on the grid's edge for {record['on_edge']}")
    print(f"selected {record['selected']} ({record['metric']} {record['score']:.2f})")
    write_tuning(snakemake.output.tuning, record)
