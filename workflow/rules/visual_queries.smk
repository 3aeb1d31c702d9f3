# visual_queries: vision-centric video evaluation (paper 2). The sprite videos of the video
# family are decoded once; per trained model one tuning job (its learning-rate grid trained on
# the tuning seeds' training videos, scored on validation videos that no evaluation seed tests;
# a core.tuning record; `visual_queries_tune` builds them all); per seed the items are built
# (train split and the test benchmark in both modes), then one job per (method, seed) answers
# them, trained with the selected values; the shared tail (tail.smk) writes the table, claims,
# tuning summary, provenance and report.
from reprolab.core.tuning import grid_points
from reprolab.studies.visual_queries.workflow_io import (
    check_grids as vq_check_grids,
    check_params as vq_check_params,
    frames_dir as vq_real_frames,
    items_path as vq_real_items,
    real_datasets as vq_real_datasets,
    summary_path as vq_real_summary,
    tuning_records as vq_tuning_records,
)

VQ = section("visual_queries")
VQ_VIDEO = vq_check_params(VQ, section("video")["datasets"])
vq_check_grids(VQ)
VQ_RAW = f"data/raw/video/{VQ['dataset']}"
VQ_FRAMES = f"data/video/{VQ['dataset']}/frames"
VQ_DATA = "data/visual_queries"
VQ_RUNS = [
    f"results/visual_queries/runs/{method}/seed{seed}/metrics.json"
    for method in VQ["methods"]
    for seed in SEEDS
]
# Paper scale: the real datasets' items (CLEVRER, SSv2) that every run job answers too
# (real_jobs); none below paper scale, where these lists are empty and nothing changes.
VQ_REAL = vq_real_datasets(VQ)
VQ_TUNED = vq_tuning_records(VQ["methods"])
VQ_TUNING = expand(f"{VQ_DATA}/tuning/{{method}}.json", method=VQ_TUNED)
VQ_TUNE_RUNS = len(TUNING_SEEDS) * max(
    [len(grid_points(VQ["tune"]["grid"][m])) for m in VQ_TUNED], default=0
)


rule visual_queries_tune_method:
    input:
        frames=VQ_FRAMES,
        annotations=f"{VQ_RAW}/annotations",
    output:
        tuning=f"{VQ_DATA}/tuning/{{method}}.json",
    log:
        "logs/visual_queries/tune/{method}.log",
    wildcard_constraints:
        method=wildcard_choices(VQ_TUNED) or "no_trained_method",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 64000),
            runtime=(2 * VQ_TUNE_RUNS, 720 * VQ_TUNE_RUNS),
            gpus=1,
        ),
    params:
        study=VQ,
        scene=VQ_VIDEO["scene"],
        seeds=TUNING_SEEDS,
        eval_seeds=SEEDS,
    script:
        "../scripts/visual_queries_tune.py"


rule visual_queries_items:
    input:
        frames=VQ_FRAMES,
        annotations=f"{VQ_RAW}/annotations",
    output:
        item_set=f"{VQ_DATA}/seed{{seed}}/items.jsonl",
        text=f"{VQ_DATA}/seed{{seed}}/benchmark_text.jsonl",
        visual=f"{VQ_DATA}/seed{{seed}}/benchmark_visual.jsonl",
        options=f"{VQ_DATA}/seed{{seed}}/options.h5",
        summary=f"{VQ_DATA}/seed{{seed}}/summary.json",
    log:
        "logs/visual_queries/items/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(4000, 16000), runtime=(20, 240)),
    params:
        study=VQ,
        scene=VQ_VIDEO["scene"],
    script:
        "../scripts/visual_queries_items.py"


rule visual_queries_run:
    input:
        frames=VQ_FRAMES,
        annotations=f"{VQ_RAW}/annotations",
        item_set=f"{VQ_DATA}/seed{{seed}}/items.jsonl",
        # every record (a job applies its method's; a method that trains nothing, none): the
        # contract asks each run rule to read the tuning records by name
        tuning=VQ_TUNING,
        paper_data=lambda wc: paper_inputs("visual_queries", wc.method, *VQ_REAL),
        real_items=lambda wc: [vq_real_items(real, wc.seed) for real in VQ_REAL],
        real_frames=[vq_real_frames(real) for real in VQ_REAL],
    output:
        metrics="results/visual_queries/runs/{method}/seed{seed}/metrics.json",
        predictions="results/visual_queries/runs/{method}/seed{seed}/predictions.csv",
    log:
        "logs/visual_queries/run/{method}_seed{seed}.log",
    wildcard_constraints:
        method=wildcard_choices(VQ["methods"]),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 64000), runtime=(60, 720), gpus=1),
    params:
        study=VQ,
        scene=VQ_VIDEO["scene"],
    script:
        "../scripts/visual_queries_run.py"


if VQ_REAL:

    rule visual_queries_real_items:
        input:
            frames=lambda wc: vq_real_frames(wc.real),
            paper_data=lambda wc: paper_inputs("visual_queries", wc.real),
        output:
            item_set=vq_real_items("{real}", "{seed}"),
            summary=vq_real_summary("{real}", "{seed}"),
        log:
            "logs/visual_queries/real_items/{real}_seed{seed}.log",
        wildcard_constraints:
            real=wildcard_choices(VQ_REAL),
            seed=r"\d+",
        conda:
            "../../envs/torch.yaml"
        threads: 1
        resources:
            **job_resources(mem_mb=(4000, 16000), runtime=(20, 240)),
        params:
            study=VQ,
        script:
            "../scripts/visual_queries_real_items.py"


register_study(
    "visual_queries",
    runs=VQ_RUNS,
    tuning=VQ_TUNING,
    captions={
        "table": "visual_queries: accuracy with text options and with visual (image) options on "
        "three families (temporal frame retrieval, video future prediction, causal memory "
        "distortion) for the oracle, option-only blind baselines, a pixel heuristic, "
        "caption-then-reason and TinyVLM (balanced and text-heavy training), mean ± std over "
        "seeds.",
        "curves": "visual_queries text-to-visual lines (long format ``x,series,y``, the input of "
        "``dvc plots``): accuracy (%) with text options (x = 0) and with visual options "
        "(x = 1), one series per ``<family>/<method>``, mean over seeds. The runs record no "
        "per-step curve; the drop from x = 0 to x = 1 is the table's Δ.",
        "report": "The papermill report of the visual_queries study: example items in both "
        "option modes, the table, the text − visual gap per family and backend, the claim "
        "and benchmark checks and the learning-rate tuning curves.",
    },
    report_params={
        "methods": VQ["methods"],
        "frames_dir": VQ_FRAMES,
        "raw_dir": VQ_RAW,
        "items_file": f"{VQ_DATA}/seed{SEEDS[0]}/items.jsonl",
        "scene": VQ_VIDEO["scene"],
        "render": VQ["render"],
        "example_seed": SEEDS[0],
    },
    report_inputs={
        "frames": VQ_FRAMES,
        "item_set": expand(f"{VQ_DATA}/seed{{seed}}/items.jsonl", seed=SEEDS[:1]),
    },
    provenance_values={"visual_queries": VQ, "video": section("video")},
)
