# ssg: Sparse Support Grounding MIL (paper 7). Per dataset and seed one job trains every method
# (SynthMIL regimes and EndoSeq are generated in the job; the wsi dataset reads the tile
# features of data/wsi/<cohort>/features); then the table and claims, provenance and report.
from reprolab.studies.ssg.results import datasets as ssg_datasets
from reprolab.studies.ssg.results import run_plan as ssg_run_plan
from reprolab.studies.ssg import workflow_io as ssg_io

SSG = section("ssg")
SSG_DATASETS = ssg_datasets(SSG)
SSG_PLAN = ssg_run_plan(SSG)
SSG_RUNS_ROOT = "results/ssg/runs"
SSG_WSI_ROOTS = ("data/wsi", "data/raw/wsi")
SSG_RUNS = [
    f"{SSG_RUNS_ROOT}/{dataset}/{method}/seed{seed}/metrics.json"
    for dataset, method in SSG_PLAN
    for seed in SEEDS
]
SSG_TABLE = list(SSG["datasets"])
SSG_SWEEP = [name for name in SSG_DATASETS if name not in SSG_TABLE]
SSG_SWEEP_METHODS = [
    method for name, method in SSG_PLAN if SSG_SWEEP and name == SSG_SWEEP[0]
]
SSG_REPORT_WSI = ssg_io.report_wsi(SSG["datasets"], *SSG_WSI_ROOTS)
SSG_CURVES = [
    f"{SSG_RUNS_ROOT}/{dataset}/{method}/seed{seed}/curves.h5"
    for dataset in SSG_TABLE
    for method in SSG["methods"]
    for seed in SEEDS
]


rule ssg_train:
    input:
        unpack(lambda wc: ssg_io.wsi_inputs(SSG_DATASETS[wc.dataset], *SSG_WSI_ROOTS)),
    output:
        **ssg_io.run_files(SSG_RUNS_ROOT, SSG["methods"]),
    log:
        "logs/ssg/train/{dataset}_seed{seed}.log",
    wildcard_constraints:
        dataset="|".join(SSG_TABLE),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 120 * attempt,
    params:
        spec=lambda wc: SSG_DATASETS[wc.dataset],
        wsi=lambda wc: ssg_io.wsi_paths(SSG_DATASETS[wc.dataset], *SSG_WSI_ROOTS),
        methods=SSG["methods"],
        model=SSG["model"],
        train=SSG["train"],
    script:
        "../scripts/ssg_train.py"


rule ssg_train_sweep:
    output:
        **ssg_io.run_files(SSG_RUNS_ROOT, SSG_SWEEP_METHODS),
    log:
        "logs/ssg/train/{dataset}_seed{seed}.log",
    wildcard_constraints:
        dataset="|".join(SSG_SWEEP) or "no_sweep",
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    params:
        spec=lambda wc: SSG_DATASETS[wc.dataset],
        wsi={},
        methods=SSG_SWEEP_METHODS,
        model=SSG["model"],
        train=SSG["train"],
    script:
        "../scripts/ssg_train.py"


rule ssg_summarize:
    input:
        runs=SSG_RUNS,
        curves=SSG_CURVES,
    output:
        table=report(
            "results/ssg/table.csv",
            caption="../report/ssg_table.rst",
            category="ssg",
            subcategory="table",
            labels={"study": "ssg", "kind": "table"},
        ),
        table_md="results/ssg/table.md",
        table_tex="results/ssg/table.tex",
        claims="results/ssg/claims.json",
        metrics="results/ssg/metrics.json",
        curves=report(
            "results/ssg/curves.csv",
            caption="../report/ssg_curves.rst",
            category="ssg",
            subcategory="curves",
            labels={"study": "ssg", "kind": "curves"},
        ),
    log:
        "logs/ssg/summarize.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        study=SSG,
        seeds=SEEDS,
    script:
        "../scripts/ssg_summarize.py"


rule ssg_provenance:
    input:
        metrics="results/ssg/metrics.json",
    output:
        provenance="results/ssg/provenance.json",
    log:
        "logs/ssg/provenance.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        study="ssg",
        values={"ssg": SSG, "wsi": WSI},
        scale=SCALE,
        seeds=SEEDS,
        threads=THREADS,
    script:
        "../scripts/provenance.py"


rule ssg_report:
    input:
        unpack(
            lambda wc: {
                k: SSG_REPORT_WSI[k] for k in ("tiles", "manifest") if SSG_REPORT_WSI
            }
        ),
        notebook="workflow/notebooks/ssg.ipynb",
        table="results/ssg/table.csv",
        claims="results/ssg/claims.json",
        metrics="results/ssg/metrics.json",
        runs=SSG_RUNS,
    output:
        notebook="results/ssg/report.ipynb",
        html=report(
            "results/ssg/report.html",
            caption="../report/ssg_report.rst",
            category="ssg",
            subcategory="report",
            labels={"study": "ssg", "kind": "report"},
        ),
    log:
        "logs/ssg/report.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        parameters={
            "results_dir": "results/ssg",
            "datasets": SSG_TABLE,
            "methods": SSG["methods"],
            "seeds": SEEDS,
            "scale": SCALE,
            "wsi_dir": SSG_REPORT_WSI.get("dir", ""),
            "wsi_truth_dir": SSG_REPORT_WSI.get("raw", ""),
        },
    script:
        "../scripts/report.py"


rule ssg:
    input:
        study_target("ssg"),
