# proofrank: proof-quality proxies that correctness does not see (paper 5). One tuning job picks
# the technique classifier's regularisation on the labelled corpus (`snakemake proofrank_tune`);
# one data job reads the corpus (bundled, or the paper's theorem files) and records every line it
# could not read; one job per small language model trains it on the corpus; one job per seed
# measures discriminant validity and the harness. The shared tail (tail.smk) writes the table,
# claims, provenance and report.
from reprolab.core.paper_data import PROOFRANK_CORPUS, PROOFRANK_JUDGE
from reprolab.core.tuning import grid_points
from reprolab.studies.proofrank.workflow_io import backends_of as proofrank_backends_of
from reprolab.studies.proofrank.workflow_io import (
    check_params as proofrank_check_params,
)
from reprolab.studies.proofrank.workflow_io import trained_backends as proofrank_trained

PROOFRANK = section("proofrank")
proofrank_check_params(PROOFRANK)
PROOFRANK_LMS = proofrank_trained(PROOFRANK)
PROOFRANK_MODELS = proofrank_backends_of(PROOFRANK, "hf")
PROOFRANK_TUNING = "data/proofrank/tuning/classifier.json"
PROOFRANK_CORPUS_FILE = "data/proofrank/corpus.jsonl"
PROOFRANK_RUNS = expand("results/proofrank/runs/seed{seed}/metrics.json", seed=SEEDS)
# Minutes of one run job (smoke and ci, paper): seconds at smoke; at paper scale six 7-70B models
# write 8 proofs per request for every theorem, and the judge reads them all.
PROOFRANK_RUN_MINUTES = (10, 1440)


rule proofrank_tune_classifier:
    output:
        tuned=PROOFRANK_TUNING,
    log:
        "logs/proofrank/tune.log",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 4000), runtime=(5, 30)),
    params:
        study=PROOFRANK,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/proofrank_tune.py"


rule proofrank_data:
    input:
        tuned=PROOFRANK_TUNING,
        paper_data=paper_inputs("proofrank", PROOFRANK_CORPUS),
    output:
        corpus=PROOFRANK_CORPUS_FILE,
        report="data/proofrank/corpus_report.json",
    log:
        "logs/proofrank/data.log",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 16000), runtime=(5, 60)),
    params:
        study=PROOFRANK,
    script:
        "../scripts/proofrank_data.py"


rule proofrank_lm:
    input:
        corpus=PROOFRANK_CORPUS_FILE,
    output:
        model=directory("data/proofrank/lm/{backend}"),
    log:
        "logs/proofrank/lm/{backend}.log",
    wildcard_constraints:
        backend=wildcard_choices(PROOFRANK_LMS),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(2000, 8000), runtime=(10, 60)),
    params:
        study=PROOFRANK,
    script:
        "../scripts/proofrank_lm.py"


rule proofrank_run:
    input:
        corpus=PROOFRANK_CORPUS_FILE,
        tuned=PROOFRANK_TUNING,
        lms=expand("data/proofrank/lm/{backend}", backend=PROOFRANK_LMS),
        paper_data=paper_inputs("proofrank", PROOFRANK_JUDGE, *PROOFRANK_MODELS),
    output:
        metrics="results/proofrank/runs/seed{seed}/metrics.json",
    log:
        "logs/proofrank/run/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 256000),
            runtime=PROOFRANK_RUN_MINUTES,
            gpus=1,
        ),
    params:
        study=PROOFRANK,
        lms=PROOFRANK_LMS,
    script:
        "../scripts/proofrank_run.py"


register_study(
    "proofrank",
    runs=PROOFRANK_RUNS,
    tuning=[PROOFRANK_TUNING],
    captions={
        "table": "ProofRank: discriminant validity of the five proof-quality proxies (the mean "
        "change of each under each perturbation of the corpus's correct proofs) and the harness "
        "(each backend's correctness and κ-gated proxies), mean ± std over seeds.",
        "curves": "proofrank curves (long format ``x,series,y``): the proxy-vs-correctness "
        "scatter, one point per theorem (x = its correctness, y = the proxy; series "
        "``<backend>/<proxy>``), seed means.",
        "report": "The papermill report of the proofrank study: both tables, the claim checks, "
        "the validity heat map, the proxy-vs-correctness scatter per backend and example proofs.",
    },
    report_params={
        "backends": list(PROOFRANK["backends"]),
        "lm_records": {
            b: f"data/proofrank/lm/{b}/training.json" for b in PROOFRANK_LMS
        },
    },
    report_inputs={"corpus_report": "data/proofrank/corpus_report.json"},
)
