"""Rule glue: one visual_queries backend answers one seed's test items in both modes."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.core.tuning import selected
from reprolab.studies.visual_queries.dataset import load_corpus
from reprolab.studies.visual_queries.item_files import read_items
from reprolab.studies.visual_queries.jobs import run_method

with job_log(snakemake.log[0]):
    corpus = load_corpus(
        Path(snakemake.input.annotations).parent,
        snakemake.input.frames,
        dict(snakemake.params.scene),
    )
    run_method(
        snakemake.wildcards.method,
        corpus,
        read_items(snakemake.input.item_set),
        int(snakemake.wildcards.seed),
        dict(snakemake.params.study),
        selected(snakemake.input.tuning),
        snakemake.threads,
        Path(snakemake.output.metrics).parent,
    )
