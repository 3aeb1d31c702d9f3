"""Rule glue: execute a study's notebook template with papermill, insert the study's design
notes (docs/studies/<id>.md) after its title and convert it to HTML without the code cells."""

from reprolab.core.progress import job_log
from reprolab.core.report import render_report

with job_log(snakemake.log[0]):
    render_report(
        snakemake.input.notebook,
        snakemake.output.notebook,
        snakemake.output.html,
        parameters=dict(snakemake.params.parameters),
        doc=snakemake.input.doc,
    )
