"""Rule glue: embed every tiled slide of a cohort with the frozen encoder of the params."""

from pathlib import Path

from reprolab.core.determinism import resolve_device, seed_everything
from reprolab.core.progress import job_log
from reprolab.preprocess.wsi.features import extract_cohort

with job_log(snakemake.log[0]):
    p = snakemake.params.features
    seed_everything(int(p["encoder"]["seed"]), snakemake.threads)
    extract_cohort(
        snakemake.params.slides,
        Path(snakemake.input.tiles) / "patches",
        snakemake.output.features,
        dict(p["encoder"]),
        batch_size=p["batch_size"],
        workers=p["loader_workers"],
        threads=snakemake.threads,
        device=str(resolve_device(p["device"])),
    )
