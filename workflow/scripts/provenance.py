"""Rule glue: write results/<id>/provenance.json."""

from reprolab.core.io import write_json
from reprolab.core.progress import job_log
from reprolab.core.provenance import provenance

with job_log(snakemake.log[0]):
    p = snakemake.params
    write_json(
        snakemake.output.provenance,
        provenance(p.study, p.scale, list(p.seeds), p.threads, p.values),
    )
