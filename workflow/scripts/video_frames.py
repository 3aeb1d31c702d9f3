"""Rule glue: extract frame-exact clips from a dataset's videos (clips.h5, index, process list).

Each video is decoded in a child process started by a forkserver, which re-imports this
script; the main guard keeps the children from running the job again.
"""

from reprolab.core.progress import job_log
from reprolab.preprocess.video.frames import FrameOptions, extract_frames

if __name__ == "__main__":
    with job_log(snakemake.log[0]):
        extract_frames(
            snakemake.params.videos,
            snakemake.output.frames,
            FrameOptions.from_params(dict(snakemake.params.frames)),
            workers=snakemake.threads,
        )
