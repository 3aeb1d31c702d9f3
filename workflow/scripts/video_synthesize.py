"""Rule glue: render and encode a synthetic video dataset with its ground truth: sprite scenes
(`synthetic.scene`) or SynthMotion clips (`synthetic.motion`), whichever the dataset names."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.preprocess.video.motion import MotionSpec, write_motion_dataset
from reprolab.preprocess.video.synth import SceneSpec, write_scenes

with job_log(snakemake.log[0]):
    synth = dict(snakemake.params.synth)
    out_dir = Path(snakemake.output.manifest).parent
    n_videos, seed = int(synth["n_videos"]), int(snakemake.params.seed)
    encoding = dict(synth["encoding"])
    if "motion" in synth:
        spec = MotionSpec.from_params(dict(synth["motion"]))
        write_motion_dataset(out_dir, n_videos, seed, spec, encoding)
    else:
        write_scenes(out_dir, n_videos, seed, SceneSpec.from_params(dict(synth["scene"])), encoding)
