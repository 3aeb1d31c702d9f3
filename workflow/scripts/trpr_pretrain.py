"""Rule glue: pre-train the trpr backbone (a tiny ViT) on DigitStyles' digits and save it."""

from reprolab.core.determinism import seed_everything
from reprolab.core.progress import job_log
from reprolab.studies.trpr.jobs import pretrain_backbone

with job_log(snakemake.log[0]):
    seed_everything(int(snakemake.params.pretrain["seed"]), snakemake.threads)
    pretrain_backbone(
        dict(snakemake.params.backbone),
        dict(snakemake.params.pretrain),
        snakemake.input.images,
        snakemake.output.backbone,
    )
