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
        video_dataset=wildcard_choices(VIDEO_DATASETS),
    conda:
        "../../envs/video.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 2000), runtime=(30, 30)),
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
        paper_data=lambda wc: paper_inputs("video", wc.video_dataset),
    output:
        frames=directory("data/video/{video_dataset}/frames"),
    log:
        "logs/video/frames/{video_dataset}.log",
    wildcard_constraints:
        video_dataset=wildcard_choices(VIDEO_DATASETS),
    conda:
        "../../envs/video.yaml"
    threads: VIDEO["workers"]
    resources:
        **job_resources(mem_mb=(4000, 16000), runtime=(60, 240)),
    params:
        videos=lambda wc: source_dir(
            VIDEO["datasets"], wc.video_dataset, "videos", "video"
        ),
        # the family's frame options with the dataset's own changes (a real dataset whose
        # videos differ in size names one, so its clips stack)
        frames=lambda wc: {
            **VIDEO["frames"],
            **VIDEO["datasets"][wc.video_dataset].get("frames", {}),
        },
    script:
        "../scripts/video_frames.py"


rule video:
    input:
        expand("data/video/{video_dataset}/frames", video_dataset=VIDEO_DATASETS),
    localrule: True
