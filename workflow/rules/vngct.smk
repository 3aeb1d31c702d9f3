# vngct: visual-necessity-gated continual instruction tuning (paper 1). A tiny LLaVA is built
# and aligned on the stream's captions (a cached artifact; at paper scale a local checkpoint
# instead); then one job per (method, seed) tunes it through the stream; the random
# gate reads VNG-CT's routing rates of the same seed. Then the table and claims, provenance and
# report.
from reprolab.studies.vngct.jobs import check_params as vngct_check_params
from reprolab.studies.vngct.jobs import matched_run as vngct_matched_run

VNGCT = section("vngct")
vngct_check_params(VNGCT, INSTR["streams"])
VNGCT_ENTRY = INSTR["streams"][VNGCT["stream"]]
# A synthetic stream is written under data/raw/instr by the instr family; a real one is a named
# folder, read as it is (see reprolab.preprocess.sources).
VNGCT_SOURCE = VNGCT_ENTRY.get("stream", f"data/raw/instr/{VNGCT['stream']}/stream")
VNGCT_INPUTS = {
    **({"stream": VNGCT_SOURCE} if "synthetic" in VNGCT_ENTRY else {}),
    "check": f"data/instr/{VNGCT['stream']}/check.json",
}
# Paper scale tunes a local checkpoint folder, read as it is like a real stream (no alignment
# job, not a declared input); smoke and ci align one tiny LLaVA, the checkpoint of every seed.
VNGCT_ALIGNED = "data/vngct/aligned"
VNGCT_RUNS = [
    f"results/vngct/runs/{method}/seed{seed}/metrics.json"
    for method in VNGCT["methods"]
    for seed in SEEDS
]


rule vngct_align:
    input:
        **VNGCT_INPUTS,
    output:
        model=directory(VNGCT_ALIGNED),
    log:
        "logs/vngct/align.log",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 30 * attempt,
    params:
        study=VNGCT,
        stream=f"{VNGCT_SOURCE}/stream.yaml",
    script:
        "../scripts/vngct_align.py"


rule vngct_run:
    input:
        unpack(
            lambda wc: vngct_matched_run(wc.method, int(wc.seed), "results/vngct/runs")
        ),
        **VNGCT_INPUTS,
        **({} if VNGCT["checkpoint"] else {"model": VNGCT_ALIGNED}),
    output:
        metrics="results/vngct/runs/{method}/seed{seed}/metrics.json",
    log:
        "logs/vngct/run/{method}_seed{seed}.log",
    wildcard_constraints:
        method="|".join(VNGCT["methods"]),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=lambda wc, attempt: 4000 * attempt,
        runtime=lambda wc, attempt: 60 * attempt,
    params:
        study=VNGCT,
        stream=f"{VNGCT_SOURCE}/stream.yaml",
    script:
        "../scripts/vngct_run.py"


rule vngct_summarize:
    input:
        runs=VNGCT_RUNS,
    output:
        table=report(
            "results/vngct/table.csv",
            caption="../report/vngct_table.rst",
            category="vngct",
            subcategory="table",
            labels={"study": "vngct", "kind": "table"},
        ),
        table_md="results/vngct/table.md",
        table_tex="results/vngct/table.tex",
        claims="results/vngct/claims.json",
        metrics="results/vngct/metrics.json",
        curves=report(
            "results/vngct/curves.csv",
            caption="../report/vngct_curves.rst",
            category="vngct",
            subcategory="curves",
            labels={"study": "vngct", "kind": "curves"},
        ),
    log:
        "logs/vngct/summarize.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        study=VNGCT,
        seeds=SEEDS,
    script:
        "../scripts/vngct_summarize.py"


rule vngct_provenance:
    input:
        metrics="results/vngct/metrics.json",
    output:
        provenance="results/vngct/provenance.json",
    log:
        "logs/vngct/provenance.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        study="vngct",
        values={"vngct": VNGCT, "instr": INSTR},
        scale=SCALE,
        seeds=SEEDS,
        threads=THREADS,
    script:
        "../scripts/provenance.py"


rule vngct_report:
    input:
        **VNGCT_INPUTS,
        notebook="workflow/notebooks/vngct.ipynb",
        table="results/vngct/table.csv",
        claims="results/vngct/claims.json",
        metrics="results/vngct/metrics.json",
        runs=VNGCT_RUNS,
    output:
        notebook="results/vngct/report.ipynb",
        html=report(
            "results/vngct/report.html",
            caption="../report/vngct_report.rst",
            category="vngct",
            subcategory="report",
            labels={"study": "vngct", "kind": "report"},
        ),
    log:
        "logs/vngct/report.log",
    conda:
        "../../envs/report.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        parameters={
            "results_dir": "results/vngct",
            "methods": VNGCT["methods"],
            "seeds": SEEDS,
            "scale": SCALE,
            "stream": f"{VNGCT_SOURCE}/stream.yaml",
        },
    script:
        "../scripts/report.py"


rule vngct:
    input:
        study_target("vngct"),
