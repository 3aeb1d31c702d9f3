# strap: where temporal adapters belong in a frozen image transformer (paper 6). The backbone
# is pre-trained once (smoke, ci) or read from a saved folder (paper); the clips of both tasks
# come through the video family (data/video/<dataset>/frames). Per tuned row one tuning job
# (its learning-rate grid on the tuning seeds, held-out training clips of the fine task;
# `snakemake strap_tune` runs them all); per seed one job that measures temporal sensitivity,
# places the adapters and trains every row and the b-sweep on both tasks; the shared tail
# (tail.smk) writes the table, claims, provenance and report.
from reprolab.core.tuning import grid_points
from reprolab.studies.strap.workflow_io import check_params as strap_check_params
from reprolab.studies.strap.workflow_io import tuned_rows as strap_tuned_rows
from reprolab.studies.strap.workflow_io import task_files as strap_task_files

STRAP = section("strap")
strap_check_params(STRAP)
STRAP_BACKBONE = STRAP["backbone"]["checkpoint"] or "data/strap/backbone"
STRAP_TASKS = strap_task_files(
    STRAP,
    section("video")["datasets"],
    frames="data/video/{dataset}/frames",
    manifest="data/raw/video/{dataset}/manifest.csv",
)
STRAP_TUNED = strap_tuned_rows(STRAP)
STRAP_TUNING = expand("data/strap/tuning/{row}.json", row=STRAP_TUNED)
STRAP_RUNS = expand("results/strap/runs/seed{seed}/metrics.json", seed=SEEDS)
# Minutes per trained placement (smoke and ci, paper): seconds on one core at smoke scale; at
# paper scale a CLIP ViT-B/16 placement trains for hours on a GPU.
STRAP_FIT_MINUTES = (1, 240)
# A run trains every row and the b-sweep on the fine task and the coarse rows.
STRAP_FITS = (
    len(STRAP["rows"]) + len(STRAP["coarse_rows"]) + STRAP["backbone"]["layers"]
)
STRAP_TUNE_FITS = len(TUNING_SEEDS) * max(
    [len(grid_points(STRAP["tune"]["grid"][row])) for row in STRAP_TUNED], default=0
)


rule strap_pretrain:
    output:
        backbone=directory("data/strap/backbone"),
    log:
        "logs/strap/pretrain.log",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 8000), runtime=(15, 60)),
    params:
        backbone=STRAP["backbone"],
        pretrain=STRAP["pretrain"],
    script:
        "../scripts/strap_pretrain.py"


rule strap_tune_row:
    input:
        backbone=STRAP_BACKBONE,
        frames=STRAP_TASKS["fine"]["frames"],
        labels=STRAP_TASKS["fine"]["labels"],
        paper_data=paper_inputs("strap"),
    output:
        tuned="data/strap/tuning/{row}.json",
    log:
        "logs/strap/tune/{row}.log",
    wildcard_constraints:
        row=wildcard_choices(STRAP_TUNED),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 64000),
            runtime=tuple(STRAP_TUNE_FITS * m for m in STRAP_FIT_MINUTES),
            gpus=1,
        ),
    params:
        study=STRAP,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/strap_tune.py"


rule strap_run:
    input:
        tuning=STRAP_TUNING,
        backbone=STRAP_BACKBONE,
        fine_frames=STRAP_TASKS["fine"]["frames"],
        fine_labels=STRAP_TASKS["fine"]["labels"],
        coarse_frames=STRAP_TASKS["coarse"]["frames"],
        coarse_labels=STRAP_TASKS["coarse"]["labels"],
        paper_data=paper_inputs("strap"),
    output:
        metrics="results/strap/runs/seed{seed}/metrics.json",
    log:
        "logs/strap/run/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 64000),
            runtime=tuple(STRAP_FITS * m for m in STRAP_FIT_MINUTES),
            gpus=1,
        ),
    params:
        study=STRAP,
    script:
        "../scripts/strap_run.py"


register_study(
    "strap",
    runs=STRAP_RUNS,
    tuning=STRAP_TUNING,
    captions={
        "table": "STRAP against uniform adapter placements (linear probe, spatial-all, "
        "temporal-all, ST-Adapter, AIM), the reversed placement and the oracle b: top-1 on the "
        "motion and appearance tasks, trainable parameters, inference FLOPs per clip and b, "
        "mean ± std over seeds.",
        "curves": "strap curves (long format ``x,series,y``): temporal sensitivity per block "
        "of the pre-trained backbone (``ts``), of a randomly initialised one (``random_ts``) "
        "and 1 − CKA (``cka``), x = block; top-1 of the b-sweep (``sweep_top1``), x = b; "
        "means over seeds.",
        "report": "The papermill report of the strap study: TS per block with b*, accuracy "
        "against b, the table and the claim checks.",
    },
    report_params={
        "rows": STRAP["rows"],
        "coarse_rows": STRAP["coarse_rows"],
    },
    provenance_values={"strap": STRAP, "video": section("video")},
)
