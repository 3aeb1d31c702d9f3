"""Rule glue: build and align the study's tiny LLaVA on the stream's alignment records."""

from reprolab.core.progress import job_log
from reprolab.studies.vngct.jobs import align_model

with job_log(snakemake.log[0]):
    summary = align_model(
        snakemake.params.stream,
        dict(snakemake.params.study),
        snakemake.threads,
        snakemake.output.model,
    )
    print(f"alignment loss {summary['loss_first']:.3f} -> {summary['loss_last']:.3f}")
