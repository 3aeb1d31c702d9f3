# ndfa: Nonlinear Direct Feedback Alignment (paper 18). Per task and seed a data split; per
# task x method x seed one training run; then the table and claims, provenance and the report.
NDFA = section("ndfa")
NDFA_TASKS = list(NDFA["tasks"])
NDFA_RUNS = expand(
    "results/ndfa/runs/{task}/{method}/seed{seed}/metrics.json",
    task=NDFA_TASKS,
    method=NDFA["methods"],
    seed=SEEDS,
)
NDFA_CURVES = [run.replace("metrics.json", "curves.h5") for run in NDFA_RUNS]


wildcard_constraints:
    task="|".join(NDFA_TASKS),
    method="|".join(NDFA["methods"]),
    seed=r"\d+",


rule ndfa_split:
    output:
        split="data/ndfa/{task}/split_seed{seed}.h5",
    log:
        "logs/ndfa/split/{task}_seed{seed}.log",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 2000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    params:
        task=lambda wc: NDFA["tasks"][wc.task],
    script:
        "../scripts/ndfa_split.py"


rule ndfa_train:
    input:
        split="data/ndfa/{task}/split_seed{seed}.h5",
    output:
        metrics="results/ndfa/runs/{task}/{method}/seed{seed}/metrics.json",
        curves="results/ndfa/runs/{task}/{method}/seed{seed}/curves.h5",
    log:
        "logs/ndfa/train/{task}_{method}_seed{seed}.log",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    params:
        task=lambda wc: NDFA["tasks"][wc.task],
        train=NDFA["train"],
        surrogate=NDFA["surrogate"],
    script:
        "../scripts/ndfa_train.py"


rule ndfa_summarize:
    input:
        runs=NDFA_RUNS,
        curves=NDFA_CURVES,
    output:
        table=report(
            "results/ndfa/table.csv",
            caption="../report/ndfa_table.rst",
            category="ndfa",
            subcategory="table",
            labels={"study": "ndfa", "kind": "table"},
        ),
        table_md="results/ndfa/table.md",
        table_tex="results/ndfa/table.tex",
        claims="results/ndfa/claims.json",
        metrics="results/ndfa/metrics.json",
        curves=report(
            "results/ndfa/curves.csv",
            caption="../report/ndfa_curves.rst",
            category="ndfa",
            subcategory="curves",
            labels={"study": "ndfa", "kind": "curves"},
        ),
    log:
        "logs/ndfa/summarize.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        study=NDFA,
        seeds=SEEDS,
    script:
        "../scripts/ndfa_summarize.py"


rule ndfa_provenance:
    input:
        metrics="results/ndfa/metrics.json",
    output:
        provenance="results/ndfa/provenance.json",
    log:
        "logs/ndfa/provenance.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        study="ndfa",
        values=NDFA,
        scale=SCALE,
        seeds=SEEDS,
        threads=THREADS,
    script:
        "../scripts/provenance.py"


rule ndfa_report:
    input:
        notebook="workflow/notebooks/ndfa.ipynb",
        table="results/ndfa/table.csv",
        claims="results/ndfa/claims.json",
        metrics="results/ndfa/metrics.json",
        runs=NDFA_RUNS,
    output:
        notebook="results/ndfa/report.ipynb",
        html=report(
            "results/ndfa/report.html",
            caption="../report/ndfa_report.rst",
            category="ndfa",
            subcategory="report",
            labels={"study": "ndfa", "kind": "report"},
        ),
    log:
        "logs/ndfa/report.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        parameters={
            "results_dir": "results/ndfa",
            "tasks": NDFA_TASKS,
            "methods": NDFA["methods"],
            "seeds": SEEDS,
            "scale": SCALE,
        },
    script:
        "../scripts/report.py"


rule ndfa:
    input:
        study_target("ndfa"),
