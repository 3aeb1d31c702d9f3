"""Rule glue: build one seed's items (all splits) and its test benchmark in both modes."""

from pathlib import Path

from reprolab.core.io import write_json
from reprolab.core.progress import job_log
from reprolab.studies.visual_queries.dataset import load_corpus
from reprolab.studies.visual_queries.jobs import make_items

with job_log(snakemake.log[0]):
    corpus = load_corpus(
        Path(snakemake.input.annotations).parent,
        snakemake.input.frames,
        dict(snakemake.params.scene),
    )
    summary = make_items(
        corpus,
        int(snakemake.wildcards.seed),
        dict(snakemake.params.study),
        Path(snakemake.output.item_set).parent,
    )
    write_json(snakemake.output.summary, summary)
