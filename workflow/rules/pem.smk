# pem: Predictive Entropy Maximization for blind source separation (paper 9). One job per
# (noise level, seed) runs every method on every source setting; then the table and claims,
# provenance and the report.
from reprolab.studies.pem.jobs import check_params as pem_check_params
from reprolab.studies.pem.results import snr_key as pem_snr_key

PEM = section("pem")
pem_check_params(PEM)
PEM_NOISE = {pem_snr_key(db): float(db) for db in PEM["noise_db"]}
PEM_RUNS = expand(
    "results/pem/runs/{noise}/seed{seed}/metrics.json", noise=PEM_NOISE, seed=SEEDS
)
# Minutes per job: seconds at smoke scale; at paper scale (500k samples, CorInfoMax with 500
# inner iterations) a job runs for hours on one core.
PEM_RUNTIME = 1440 if SCALE == "paper" else 30


rule pem_run:
    output:
        metrics="results/pem/runs/{noise}/seed{seed}/metrics.json",
    log:
        "logs/pem/run/{noise}_seed{seed}.log",
    wildcard_constraints:
        noise="|".join(PEM_NOISE),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: (8000 if SCALE == "paper" else 2000) * attempt,
        runtime=lambda wc, attempt: PEM_RUNTIME * attempt,
    params:
        study=PEM,
        snr_db=lambda wc: PEM_NOISE[wc.noise],
    script:
        "../scripts/pem_run.py"


rule pem_summarize:
    input:
        runs=PEM_RUNS,
    output:
        table=report(
            "results/pem/table.csv",
            caption="../report/pem_table.rst",
            category="pem",
            subcategory="table",
            labels={"study": "pem", "kind": "table"},
        ),
        table_md="results/pem/table.md",
        table_tex="results/pem/table.tex",
        claims="results/pem/claims.json",
        metrics="results/pem/metrics.json",
        curves=report(
            "results/pem/curves.csv",
            caption="../report/pem_curves.rst",
            category="pem",
            subcategory="curves",
            labels={"study": "pem", "kind": "curves"},
        ),
    log:
        "logs/pem/summarize.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        study=PEM,
        seeds=SEEDS,
    script:
        "../scripts/pem_summarize.py"


rule pem_provenance:
    input:
        metrics="results/pem/metrics.json",
    output:
        provenance="results/pem/provenance.json",
    log:
        "logs/pem/provenance.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        study="pem",
        values=PEM,
        scale=SCALE,
        seeds=SEEDS,
        threads=THREADS,
    script:
        "../scripts/provenance.py"


rule pem_report:
    input:
        notebook="workflow/notebooks/pem.ipynb",
        table="results/pem/table.csv",
        claims="results/pem/claims.json",
        metrics="results/pem/metrics.json",
        runs=PEM_RUNS,
    output:
        notebook="results/pem/report.ipynb",
        html=report(
            "results/pem/report.html",
            caption="../report/pem_report.rst",
            category="pem",
            subcategory="report",
            labels={"study": "pem", "kind": "report"},
        ),
    log:
        "logs/pem/report.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        parameters={
            "results_dir": "results/pem",
            "methods": PEM["methods"],
            "sources": PEM["sources"],
            "noise_db": [float(db) for db in PEM["noise_db"]],
            "seeds": SEEDS,
            "scale": SCALE,
        },
    script:
        "../scripts/report.py"


rule pem:
    input:
        study_target("pem"),
