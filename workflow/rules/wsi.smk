# Whole-slide images (preprocessing family): per cohort, synthetic slides are generated (smoke
# and ci scale) or a folder of real slides is named (paper scale); then tissue segmentation and
# tiling, then tile features from a frozen encoder. Studies read data/wsi/<cohort>/features.
from reprolab.preprocess.sources import generated_source, source_dir

WSI = section("wsi")
WSI_COHORTS = list(WSI["cohorts"])


rule wsi_synthesize:
    output:
        slides=directory("data/raw/wsi/{cohort}/slides"),
        truth=directory("data/raw/wsi/{cohort}/truth"),
        manifest="data/raw/wsi/{cohort}/manifest.csv",
    log:
        "logs/wsi/synthesize/{cohort}.log",
    wildcard_constraints:
        cohort=wildcard_choices(WSI_COHORTS),
    conda:
        "../../envs/wsi.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(4000, 4000), runtime=(30, 30)),
    params:
        synth=lambda wc: WSI["cohorts"][wc.cohort]["synthetic"],
        seed=lambda wc: WSI["cohorts"][wc.cohort]["seed"],
    script:
        "../scripts/wsi_synthesize.py"


rule wsi_tile:
    input:
        unpack(lambda wc: generated_source(WSI["cohorts"], wc.cohort, "slides", "wsi")),
        paper_data=lambda wc: paper_inputs("wsi", wc.cohort),
    output:
        tiles=directory("data/wsi/{cohort}/tiles"),
    log:
        "logs/wsi/tile/{cohort}.log",
    wildcard_constraints:
        cohort=wildcard_choices(WSI_COHORTS),
    conda:
        "../../envs/wsi.yaml"
    threads: WSI["workers"]
    resources:
        **job_resources(mem_mb=(4000, 16000), runtime=(120, 240)),
    params:
        slides=lambda wc: source_dir(WSI["cohorts"], wc.cohort, "slides", "wsi"),
        tiling=WSI["tiling"],
    script:
        "../scripts/wsi_tile.py"


rule wsi_features:
    input:
        unpack(lambda wc: generated_source(WSI["cohorts"], wc.cohort, "slides", "wsi")),
        tiles="data/wsi/{cohort}/tiles",
        paper_data=lambda wc: paper_inputs("wsi", wc.cohort, WSI_ENCODER),
    output:
        features=directory("data/wsi/{cohort}/features"),
    log:
        "logs/wsi/features/{cohort}.log",
    wildcard_constraints:
        cohort=wildcard_choices(WSI_COHORTS),
    conda:
        "../../envs/wsi.yaml"
    threads: WSI["workers"]
    resources:
        **job_resources(mem_mb=(8000, 32000), runtime=(240, 1440), gpus=1),
    params:
        slides=lambda wc: source_dir(WSI["cohorts"], wc.cohort, "slides", "wsi"),
        features=WSI["features"],
    script:
        "../scripts/wsi_features.py"


rule wsi:
    input:
        expand("data/wsi/{cohort}/features", cohort=WSI_COHORTS),
    localrule: True
