# ndfa: Nonlinear Direct Feedback Alignment (paper 18). Per task and seed a data split; per
# task x method x seed one training run; the shared tail (tail.smk) writes the table, claims,
# provenance and report.
NDFA = section("ndfa")
NDFA_TASKS = list(NDFA["tasks"])
NDFA_RUNS = expand(
    "results/ndfa/runs/{task}/{method}/seed{seed}/metrics.json",
    task=NDFA_TASKS,
    method=NDFA["methods"],
    seed=SEEDS,
)
NDFA_CURVES = [run.replace("metrics.json", "curves.h5") for run in NDFA_RUNS]


rule ndfa_split:
    output:
        split="data/ndfa/{task}/split_seed{seed}.h5",
    log:
        "logs/ndfa/split/{task}_seed{seed}.log",
    wildcard_constraints:
        task="|".join(NDFA_TASKS),
        seed=r"\d+",
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
    wildcard_constraints:
        task="|".join(NDFA_TASKS),
        method="|".join(NDFA["methods"]),
        seed=r"\d+",
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


register_study(
    "ndfa",
    runs=NDFA_RUNS + NDFA_CURVES,
    captions={
        "table": "NDFA against BP, DFA and learned linear feedback: test accuracy, gap to BP and "
        "feedback alignment, mean ± std over seeds.",
        "curves": "ndfa learning curves (long format ``x,series,y``, the input of ``dvc plots``): "
        "test accuracy (%) after every epoch, one series per ``<task>/<method>``, mean over "
        "seeds; the last point of a series is its accuracy in the table.",
        "report": "The papermill report of the ndfa study: learning curves, per-layer alignment "
        "of the feedback with the true gradient, the table and the claim checks.",
    },
    report_params={"tasks": NDFA_TASKS, "methods": NDFA["methods"]},
)
