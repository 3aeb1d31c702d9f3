"""Rule glue: one normlift scene (synthetic, or a real scene folder at paper scale)."""

from reprolab.core.progress import job_log
from reprolab.studies.normlift.jobs import write_scene_file

with job_log(snakemake.log[0]):
    write_scene_file(
        dict(snakemake.params.data),
        int(snakemake.wildcards.seed),
        snakemake.output.scene,
        snakemake.params.folder,
        snakemake.threads,
    )
