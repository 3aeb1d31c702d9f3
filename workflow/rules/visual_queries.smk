# visual_queries: vision-centric video evaluation (paper 2). The sprite videos of the video
# family are decoded once; per seed the items are built (train split and the test benchmark in
# both modes), then one job per (method, seed) answers them; then the table and claims,
# provenance and report.
from reprolab.studies.visual_queries.jobs import check_params as vq_check_params

VQ = section("visual_queries")
VQ_VIDEO = vq_check_params(VQ, VIDEO["datasets"])
VQ_RAW = f"data/raw/video/{VQ['dataset']}"
VQ_FRAMES = f"data/video/{VQ['dataset']}/frames"
VQ_DATA = "data/visual_queries"
VQ_RUNS = [
    f"results/visual_queries/runs/{method}/seed{seed}/metrics.json"
    for method in VQ["methods"]
    for seed in SEEDS
]


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
        "../../envs/video.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 20 * attempt,
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
    output:
        metrics="results/visual_queries/runs/{method}/seed{seed}/metrics.json",
        predictions="results/visual_queries/runs/{method}/seed{seed}/predictions.csv",
    log:
        "logs/visual_queries/run/{method}_seed{seed}.log",
    wildcard_constraints:
        method="|".join(VQ["methods"]),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    params:
        study=VQ,
        scene=VQ_VIDEO["scene"],
    script:
        "../scripts/visual_queries_run.py"


rule visual_queries_summarize:
    input:
        runs=VQ_RUNS,
    output:
        table=report(
            "results/visual_queries/table.csv",
            caption="../report/visual_queries_table.rst",
            category="visual_queries",
            subcategory="table",
            labels={"study": "visual_queries", "kind": "table"},
        ),
        table_md="results/visual_queries/table.md",
        table_tex="results/visual_queries/table.tex",
        claims="results/visual_queries/claims.json",
        metrics="results/visual_queries/metrics.json",
        curves=report(
            "results/visual_queries/curves.csv",
            caption="../report/visual_queries_curves.rst",
            category="visual_queries",
            subcategory="curves",
            labels={"study": "visual_queries", "kind": "curves"},
        ),
    log:
        "logs/visual_queries/summarize.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        study=VQ,
        seeds=SEEDS,
    script:
        "../scripts/visual_queries_summarize.py"


rule visual_queries_provenance:
    input:
        metrics="results/visual_queries/metrics.json",
    output:
        provenance="results/visual_queries/provenance.json",
    log:
        "logs/visual_queries/provenance.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        study="visual_queries",
        values={"visual_queries": VQ, "video": VIDEO},
        scale=SCALE,
        seeds=SEEDS,
        threads=THREADS,
    script:
        "../scripts/provenance.py"


rule visual_queries_report:
    input:
        notebook="workflow/notebooks/visual_queries.ipynb",
        table="results/visual_queries/table.csv",
        claims="results/visual_queries/claims.json",
        metrics="results/visual_queries/metrics.json",
        runs=VQ_RUNS,
        frames=VQ_FRAMES,
        item_set=expand(f"{VQ_DATA}/seed{{seed}}/items.jsonl", seed=SEEDS[:1]),
    output:
        notebook="results/visual_queries/report.ipynb",
        html=report(
            "results/visual_queries/report.html",
            caption="../report/visual_queries_report.rst",
            category="visual_queries",
            subcategory="report",
            labels={"study": "visual_queries", "kind": "report"},
        ),
    log:
        "logs/visual_queries/report.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        parameters={
            "results_dir": "results/visual_queries",
            "methods": VQ["methods"],
            "seeds": SEEDS,
            "scale": SCALE,
            "frames_dir": VQ_FRAMES,
            "raw_dir": VQ_RAW,
            "items_file": f"{VQ_DATA}/seed{SEEDS[0]}/items.jsonl",
            "scene": VQ_VIDEO["scene"],
            "render": VQ["render"],
            "example_seed": SEEDS[0],
        },
    script:
        "../scripts/report.py"


rule visual_queries:
    input:
        study_target("visual_queries"),
