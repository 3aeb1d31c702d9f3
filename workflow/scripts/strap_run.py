"""Rule glue: one seed of the strap study: sensitivity, boundary and every placement on both
tasks, with the learning rates the strap_tune jobs selected."""

from reprolab.core.progress import job_log
from reprolab.studies.strap.jobs import run_seed

with job_log(snakemake.log[0]):
    run_seed(
        dict(snakemake.params.study),
        int(snakemake.wildcards.seed),
        snakemake.input.backbone,
        {
            "fine": (snakemake.input.fine_frames, snakemake.input.fine_labels),
            "coarse": (snakemake.input.coarse_frames, snakemake.input.coarse_labels),
        },
        list(snakemake.input.tuning),
        snakemake.output.metrics,
        snakemake.threads,
    )
