# Videos (preprocessing family): per dataset, synthetic sprite scenes are rendered and encoded
# to mp4 with their ground truth (smoke and ci scale), or a folder of real videos is named
# (paper scale); then frame-exact clip extraction. Studies read data/video/<dataset>/frames.
from reprolab.preprocess.sources import generated_source, source_dir

VIDEO = section("video")
VIDEO_DATASETS = list(VIDEO["datasets"])


rule video_synthesize:
    output:
        videos=directory("data/raw/video/{video_dataset}/videos"),
        annotations=directory("data/raw/video/{video_dataset}/annotations"),
        manifest="data/raw/video/{video_dataset}/manifest.csv",
    log:
        "logs/video/synthesize/{video_dataset}.log",
    wildcard_constraints:
        video_dataset="|".join(VIDEO_DATASETS),
    conda:
        "../../envs/video.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    params:
        synth=lambda wc: VIDEO["datasets"][wc.video_dataset]["synthetic"],
        seed=lambda wc: VIDEO["datasets"][wc.video_dataset]["seed"],
    script:
        "../scripts/video_synthesize.py"


rule video_frames:
    input:
        unpack(
            lambda wc: generated_source(
                VIDEO["datasets"], wc.video_dataset, "videos", "video"
            )
        ),
    output:
        frames=directory("data/video/{video_dataset}/frames"),
    log:
        "logs/video/frames/{video_dataset}.log",
    wildcard_constraints:
        video_dataset="|".join(VIDEO_DATASETS),
    conda:
        "../../envs/video.yaml"
    threads: VIDEO["workers"]
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    params:
        videos=lambda wc: source_dir(
            VIDEO["datasets"], wc.video_dataset, "videos", "video"
        ),
        frames=VIDEO["frames"],
    script:
        "../scripts/video_frames.py"


rule video:
    input:
        expand("data/video/{video_dataset}/frames", video_dataset=VIDEO_DATASETS),
