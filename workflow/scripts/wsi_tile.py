"""Rule glue: segment and tile a cohort's slides (process list, coords, QC images).

The tile-reading workers are started with forkserver, which re-imports this script in each
worker; the main guard keeps them from running the job again.
"""

from reprolab.core.progress import job_log
from reprolab.preprocess.wsi.tiling import TilingOptions, tile_slides

if __name__ == "__main__":
    with job_log(snakemake.log[0]):
        tile_slides(
            snakemake.params.slides,
            snakemake.output.tiles,
            TilingOptions.from_params(snakemake.params.tiling),
            workers=snakemake.threads,
        )
