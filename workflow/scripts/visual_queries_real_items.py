"""Rule glue: one seed's items of a real video dataset (CLEVRER or SSv2) at paper scale."""

from pathlib import Path

from reprolab.core.io import write_json
from reprolab.core.progress import job_log
from reprolab.studies.visual_queries.real_jobs import make_real_items

with job_log(snakemake.log[0]):
    summary = make_real_items(
        snakemake.wildcards.real,
        snakemake.input.frames,
        int(snakemake.wildcards.seed),
        dict(snakemake.params.study),
        Path(snakemake.output.item_set).parent,
    )
    write_json(snakemake.output.summary, summary)
