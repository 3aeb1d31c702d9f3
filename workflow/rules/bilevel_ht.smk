# bilevel_ht: decentralised bilevel optimisation under heavy-tailed noise (paper 19). Per dataset,
# topology and seed one job runs every noise setting and method; then the table and claims,
# provenance and the report.
BILEVEL_HT = section("bilevel_ht")
BILEVEL_HT_DATASETS = list(BILEVEL_HT["datasets"])
BILEVEL_HT_RUNS = expand(
    "results/bilevel_ht/runs/{bht_dataset}/{bht_topology}/seed{seed}/metrics.json",
    bht_dataset=BILEVEL_HT_DATASETS,
    bht_topology=BILEVEL_HT["topologies"],
    seed=SEEDS,
)
BILEVEL_HT_CURVES = [
    run.replace("metrics.json", "curves.h5") for run in BILEVEL_HT_RUNS
]


rule bilevel_ht_run:
    output:
        metrics="results/bilevel_ht/runs/{bht_dataset}/{bht_topology}/seed{seed}/metrics.json",
        curves="results/bilevel_ht/runs/{bht_dataset}/{bht_topology}/seed{seed}/curves.h5",
    log:
        "logs/bilevel_ht/run/{bht_dataset}_{bht_topology}_seed{seed}.log",
    wildcard_constraints:
        bht_dataset="|".join(BILEVEL_HT_DATASETS),
        bht_topology="|".join(BILEVEL_HT["topologies"]),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=lambda wc, attempt: 1000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    params:
        study=BILEVEL_HT,
    script:
        "../scripts/bilevel_ht_run.py"


rule bilevel_ht_summarize:
    input:
        runs=BILEVEL_HT_RUNS,
        curves=BILEVEL_HT_CURVES,
    output:
        table=report(
            "results/bilevel_ht/table.csv",
            caption="../report/bilevel_ht_table.rst",
            category="bilevel_ht",
            subcategory="table",
            labels={"study": "bilevel_ht", "kind": "table"},
        ),
        table_md="results/bilevel_ht/table.md",
        table_tex="results/bilevel_ht/table.tex",
        claims="results/bilevel_ht/claims.json",
        metrics="results/bilevel_ht/metrics.json",
        curves=report(
            "results/bilevel_ht/curves.csv",
            caption="../report/bilevel_ht_curves.rst",
            category="bilevel_ht",
            subcategory="curves",
            labels={"study": "bilevel_ht", "kind": "curves"},
        ),
    log:
        "logs/bilevel_ht/summarize.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        study=BILEVEL_HT,
        seeds=SEEDS,
    script:
        "../scripts/bilevel_ht_summarize.py"


rule bilevel_ht_provenance:
    input:
        metrics="results/bilevel_ht/metrics.json",
    output:
        provenance="results/bilevel_ht/provenance.json",
    log:
        "logs/bilevel_ht/provenance.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        study="bilevel_ht",
        values=BILEVEL_HT,
        scale=SCALE,
        seeds=SEEDS,
        threads=THREADS,
    script:
        "../scripts/provenance.py"


rule bilevel_ht_report:
    input:
        notebook="workflow/notebooks/bilevel_ht.ipynb",
        table="results/bilevel_ht/table.csv",
        claims="results/bilevel_ht/claims.json",
        metrics="results/bilevel_ht/metrics.json",
        runs=BILEVEL_HT_RUNS,
    output:
        notebook="results/bilevel_ht/report.ipynb",
        html=report(
            "results/bilevel_ht/report.html",
            caption="../report/bilevel_ht_report.rst",
            category="bilevel_ht",
            subcategory="report",
            labels={"study": "bilevel_ht", "kind": "report"},
        ),
    log:
        "logs/bilevel_ht/report.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        parameters={
            "results_dir": "results/bilevel_ht",
            "datasets": BILEVEL_HT_DATASETS,
            "topologies": BILEVEL_HT["topologies"],
            "noises": list(BILEVEL_HT["noises"]),
            "methods": list(BILEVEL_HT["methods"]),
            "method": BILEVEL_HT["claims"]["method"],
            "seeds": SEEDS,
            "scale": SCALE,
        },
    script:
        "../scripts/report.py"


rule bilevel_ht:
    input:
        study_target("bilevel_ht"),
