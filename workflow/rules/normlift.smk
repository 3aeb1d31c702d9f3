# normlift: lifting 2-D features onto 3-D Gaussians by normalised back-projection (paper 13).
# Per seed (evaluation and tuning) one scene job (a synthetic room, or a real scene folder at
# paper scale, with its compositing weights and feature maps); per tuned row one tuning job
# on the tuning scenes (`snakemake normlift_tune`); per evaluation seed one job that lifts and
# scores every row; the shared tail (tail.smk) writes the table, claims, provenance and report.
from reprolab.studies.normlift.workflow_io import ROWS as NORMLIFT_ROWS
from reprolab.studies.normlift.workflow_io import TUNED as NORMLIFT_TUNED
from reprolab.studies.normlift.workflow_io import check_params as normlift_check_params
from reprolab.studies.normlift.workflow_io import scene_folder as normlift_scene_folder

NORMLIFT = section("normlift")
normlift_check_params(NORMLIFT)
NORMLIFT_TUNING = expand(
    "data/normlift/tuning/{method}.json",
    method=[m for m in NORMLIFT["methods"] if m in NORMLIFT_TUNED],
)
NORMLIFT_RUNS = expand(
    "results/normlift/runs/seed{seed}/{name}",
    seed=SEEDS,
    name=["metrics.json", "lifted.h5"],
)
# Minutes per scene job and per run job (smoke and ci, paper): seconds on one core at smoke
# scale; a real scene (about a million Gaussians, hundreds of views) takes most of an hour.
NORMLIFT_RUNTIME = (10, 120)


rule normlift_scene:
    input:
        paper_data=paper_inputs("normlift"),
    output:
        scene="data/normlift/scenes/seed{seed}.h5",
    log:
        "logs/normlift/scene/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(2000, 64000), runtime=NORMLIFT_RUNTIME),
    params:
        data=NORMLIFT["data"],
        folder=lambda wc: (
            normlift_scene_folder(NORMLIFT, int(wc.seed), SEEDS, TUNING_SEEDS)
            if NORMLIFT["data"]["source"] == "folder"
            else None
        ),
    script:
        "../scripts/normlift_scene.py"


rule normlift_tune_method:
    input:
        scenes=expand("data/normlift/scenes/seed{seed}.h5", seed=TUNING_SEEDS),
    output:
        tuned="data/normlift/tuning/{method}.json",
    log:
        "logs/normlift/tune/{method}.log",
    wildcard_constraints:
        method=wildcard_choices(NORMLIFT_TUNED),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 64000),
            runtime=tuple(4 * len(TUNING_SEEDS) * m for m in NORMLIFT_RUNTIME),
        ),
    params:
        study=NORMLIFT,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/normlift_tune.py"


rule normlift_run:
    input:
        scene="data/normlift/scenes/seed{seed}.h5",
        tuning=NORMLIFT_TUNING,
    output:
        metrics="results/normlift/runs/seed{seed}/metrics.json",
        lifted="results/normlift/runs/seed{seed}/lifted.h5",
    log:
        "logs/normlift/run/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 64000), runtime=NORMLIFT_RUNTIME),
    params:
        study=NORMLIFT,
    script:
        "../scripts/normlift_run.py"


register_study(
    "normlift",
    runs=NORMLIFT_RUNS,
    tuning=NORMLIFT_TUNING,
    captions={
        "table": "NormLift against render-side distillation, max-weight, weighted-average and "
        "kNN-averaged lifting, with NormLift's ablations: 3-D mIoU and mean class accuracy on "
        "the observed Gaussians, 2-D mIoU on held-out views, accuracy on low- and high-support "
        "Gaussians, mean ± std over scenes (seeds).",
        "curves": "normlift reliability curves (long format ``x,series,y``): the closed form's "
        "accuracy against its reliability score (r or the calibrated ρ, bins of 0.1), mean over "
        "seeds; a useful score rises from left to right.",
        "report": "The papermill report of the normlift study: label maps of a held-out view "
        "per method beside the ground truth, reliability histograms for right and wrong "
        "labels, the table and the claim checks.",
    },
    report_params={"rows": {m: NORMLIFT_ROWS[m] for m in NORMLIFT["methods"]}},
)
