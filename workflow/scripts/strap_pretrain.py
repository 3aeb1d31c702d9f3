"""Rule glue: pre-train the strap backbone (a tiny ViT) on SynthShapes and save it."""

from reprolab.core.determinism import seed_everything
from reprolab.core.progress import job_log
from reprolab.studies.strap.backbone import pretrain

with job_log(snakemake.log[0]):
    seed_everything(int(snakemake.params.pretrain["seed"]), snakemake.threads)
    pretrain(
        dict(snakemake.params.backbone),
        dict(snakemake.params.pretrain),
        snakemake.output.backbone,
    )
