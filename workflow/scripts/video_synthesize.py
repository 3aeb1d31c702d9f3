"""Rule glue: render and encode a dataset of synthetic sprite scenes with their ground truth."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.preprocess.video.synth import SceneSpec, write_scenes

with job_log(snakemake.log[0]):
    synth = dict(snakemake.params.synth)
    write_scenes(
        Path(snakemake.output.manifest).parent,
        int(synth["n_videos"]),
        int(snakemake.params.seed),
        SceneSpec.from_params(dict(synth["scene"])),
        dict(synth["encoding"]),
    )
