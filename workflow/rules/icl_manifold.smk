# icl_manifold: in-context regression on mixtures of manifolds (paper 16). Per setting one
# tuning job (classical hyperparameters on the tuning seed's prompts), per seed one job (train
# the networks, evaluate every method on every setting and n); then the table, rate slopes and
# claims, provenance and the report.
ICL = section("icl_manifold")
ICL_SETTINGS = list(ICL["settings"])
ICL_TUNING = expand("data/icl_manifold/tuning/{setting}.json", setting=ICL_SETTINGS)
ICL_RUNS = expand("results/icl_manifold/runs/seed{seed}/errors.h5", seed=SEEDS)
ICL_TRAINING = expand("results/icl_manifold/runs/seed{seed}/training.json", seed=SEEDS)


rule icl_manifold_tune:
    output:
        tuned="data/icl_manifold/tuning/{setting}.json",
    log:
        "logs/icl_manifold/tune/{setting}.log",
    wildcard_constraints:
        setting="|".join(ICL_SETTINGS),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    params:
        study=ICL,
    script:
        "../scripts/icl_manifold_tune.py"


rule icl_manifold_eval:
    input:
        tuning=ICL_TUNING,
    output:
        errors="results/icl_manifold/runs/seed{seed}/errors.h5",
        training="results/icl_manifold/runs/seed{seed}/training.json",
    log:
        "logs/icl_manifold/eval/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    params:
        study=ICL,
    script:
        "../scripts/icl_manifold_eval.py"


rule icl_manifold_summarize:
    input:
        tuning=ICL_TUNING,
        runs=ICL_RUNS,
        training=ICL_TRAINING,
    output:
        table=report(
            "results/icl_manifold/table.csv",
            caption="../report/icl_manifold_table.rst",
            category="icl_manifold",
            subcategory="table",
            labels={"study": "icl_manifold", "kind": "table"},
        ),
        table_md="results/icl_manifold/table.md",
        table_tex="results/icl_manifold/table.tex",
        claims="results/icl_manifold/claims.json",
        metrics="results/icl_manifold/metrics.json",
        curves=report(
            "results/icl_manifold/curves.csv",
            caption="../report/icl_manifold_curves.rst",
            category="icl_manifold",
            subcategory="curves",
            labels={"study": "icl_manifold", "kind": "curves"},
        ),
    log:
        "logs/icl_manifold/summarize.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        study=ICL,
        seeds=SEEDS,
    script:
        "../scripts/icl_manifold_summarize.py"


rule icl_manifold_provenance:
    input:
        metrics="results/icl_manifold/metrics.json",
    output:
        provenance="results/icl_manifold/provenance.json",
    log:
        "logs/icl_manifold/provenance.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        study="icl_manifold",
        values=ICL,
        scale=SCALE,
        seeds=SEEDS,
        threads=THREADS,
    script:
        "../scripts/provenance.py"


rule icl_manifold_report:
    input:
        notebook="workflow/notebooks/icl_manifold.ipynb",
        table="results/icl_manifold/table.csv",
        claims="results/icl_manifold/claims.json",
        metrics="results/icl_manifold/metrics.json",
        runs=ICL_RUNS,
        training=ICL_TRAINING,
    output:
        notebook="results/icl_manifold/report.ipynb",
        html=report(
            "results/icl_manifold/report.html",
            caption="../report/icl_manifold_report.rst",
            category="icl_manifold",
            subcategory="report",
            labels={"study": "icl_manifold", "kind": "report"},
        ),
    log:
        "logs/icl_manifold/report.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        parameters={
            "results_dir": "results/icl_manifold",
            "settings": ICL_SETTINGS,
            "methods": ICL["methods"],
            "seeds": SEEDS,
            "scale": SCALE,
        },
    script:
        "../scripts/report.py"


rule icl_manifold:
    input:
        study_target("icl_manifold"),
