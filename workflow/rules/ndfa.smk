# ndfa: Nonlinear Direct Feedback Alignment (paper 18). Per task and seed a data split (table
# seeds and tuning seeds alike); per task x method one tuning job on the tuning seeds (`ndfa_tune`
# builds them all); per task x method x seed one training run with the tuned values; the shared
# tail (tail.smk) writes the table, claims, provenance and report.
from reprolab.core.tuning import grid_points
from reprolab.studies.ndfa.jobs import check_params as ndfa_check_params

NDFA = section("ndfa")
ndfa_check_params(NDFA)
NDFA_TASKS = list(NDFA["tasks"])
NDFA_TUNING = expand(
    "data/ndfa/tuning/{task}/{method}.json", task=NDFA_TASKS, method=NDFA["methods"]
)
NDFA_TUNE_RUNS = len(TUNING_SEEDS) * len(
    grid_points(NDFA["tune"]["grid"][NDFA_TASKS[0]][NDFA["methods"][0]])
)
NDFA_RUNS = expand(
    "results/ndfa/runs/{task}/{method}/seed{seed}/metrics.json",
    task=NDFA_TASKS,
    method=NDFA["methods"],
    seed=SEEDS,
)
NDFA_CURVES = [run.replace("metrics.json", "curves.h5") for run in NDFA_RUNS]


rule ndfa_split:
    input:
        paper_data=lambda wc: paper_inputs("ndfa", wc.task),
    output:
        split="data/ndfa/{task}/split_seed{seed}.h5",
    log:
        "logs/ndfa/split/{task}_seed{seed}.log",
    wildcard_constraints:
        task=wildcard_choices(NDFA_TASKS),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 16000), runtime=(30, 60)),
    params:
        task=lambda wc: NDFA["tasks"][wc.task],
    script:
        "../scripts/ndfa_split.py"


rule ndfa_tune_method:
    input:
        splits=expand("data/ndfa/{{task}}/split_seed{seed}.h5", seed=TUNING_SEEDS),
    output:
        tuning="data/ndfa/tuning/{task}/{method}.json",
    log:
        "logs/ndfa/tune/{task}_{method}.log",
    wildcard_constraints:
        task=wildcard_choices(NDFA_TASKS),
        method=wildcard_choices(NDFA["methods"]),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 32000),
            runtime=(60 * NDFA_TUNE_RUNS, 360 * NDFA_TUNE_RUNS),
            gpus=1,
        ),
    params:
        task=lambda wc: NDFA["tasks"][wc.task],
        train=NDFA["train"],
        surrogate=NDFA["surrogate"],
        tune=NDFA["tune"],
        seeds=TUNING_SEEDS,
    script:
        "../scripts/ndfa_tune.py"


rule ndfa_train:
    input:
        split="data/ndfa/{task}/split_seed{seed}.h5",
        tuning="data/ndfa/tuning/{task}/{method}.json",
    output:
        metrics="results/ndfa/runs/{task}/{method}/seed{seed}/metrics.json",
        curves="results/ndfa/runs/{task}/{method}/seed{seed}/curves.h5",
    log:
        "logs/ndfa/train/{task}_{method}_seed{seed}.log",
    wildcard_constraints:
        task=wildcard_choices(NDFA_TASKS),
        method=wildcard_choices(NDFA["methods"]),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 32000), runtime=(60, 360), gpus=1),
    params:
        task=lambda wc: NDFA["tasks"][wc.task],
        train=NDFA["train"],
        surrogate=NDFA["surrogate"],
    script:
        "../scripts/ndfa_train.py"


register_study(
    "ndfa",
    runs=NDFA_RUNS + NDFA_CURVES,
    tuning=NDFA_TUNING,
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
