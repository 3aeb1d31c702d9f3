# icl_manifold: in-context regression on mixtures of manifolds (paper 16). Per setting one
# tuning job (classical hyperparameters on the tuning seeds' prompts), per trained network one
# tuning job (its Adam learning rate at the shared training budget, on the tuning seeds; a
# core.tuning record), per seed one job (train the networks with the selected learning rates,
# evaluate every method on every setting and n); the shared tail (tail.smk) writes the table,
# rate slopes and claims, provenance and report.
ICL = section("icl_manifold")
ICL_SETTINGS = list(ICL["settings"])
# the trained networks (jobs.NETWORKS), each with a learning-rate tuning job
ICL_NETWORKS = [m for m in ("twostage_tf", "lintf") if m in ICL["methods"]]
ICL_TUNING = expand("data/icl_manifold/tuning/{setting}.json", setting=ICL_SETTINGS)
ICL_NETWORK_TUNING = expand(
    "data/icl_manifold/tuning/networks/{method}.json", method=ICL_NETWORKS
)
ICL_RUNS = expand("results/icl_manifold/runs/seed{seed}/errors.h5", seed=SEEDS)
ICL_TRAINING = expand("results/icl_manifold/runs/seed{seed}/training.json", seed=SEEDS)


rule icl_manifold_tune_setting:
    output:
        tuned="data/icl_manifold/tuning/{setting}.json",
    log:
        "logs/icl_manifold/tune/{setting}.log",
    wildcard_constraints:
        setting=wildcard_choices(ICL_SETTINGS),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 8000), runtime=(30, 240)),
    params:
        study=ICL,
        tuning_seeds=TUNING_SEEDS,
    script:
        "../scripts/icl_manifold_tune.py"


rule icl_manifold_tune_network:
    output:
        tuned="data/icl_manifold/tuning/networks/{method}.json",
    log:
        "logs/icl_manifold/tune_network/{method}.log",
    wildcard_constraints:
        method=wildcard_choices(ICL_NETWORKS),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 8000), runtime=(60, 720)),
    params:
        study=ICL,
        tuning_seeds=TUNING_SEEDS,
    script:
        "../scripts/icl_manifold_tune_network.py"


rule icl_manifold_eval:
    input:
        tuning=ICL_TUNING,
        networks=ICL_NETWORK_TUNING,
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
        **job_resources(mem_mb=(4000, 16000), runtime=(60, 720)),
    params:
        study=ICL,
    script:
        "../scripts/icl_manifold_eval.py"


register_study(
    "icl_manifold",
    runs=[*ICL_TUNING, *ICL_RUNS, *ICL_TRAINING],
    tuning=ICL_NETWORK_TUNING,
    captions={
        "table": "In-context regression on mixtures of manifolds: MSE at the smallest and "
        "largest context length and the fitted log-log rate slope (theory in the column name) "
        "per setting, mean ± std over seeds.",
        "curves": "icl_manifold error curves (long format ``x,series,y``, the input of ``dvc "
        "plots``): mean squared error against the context length n, one series per "
        "``<setting>/<method>``, mean over prompts and seeds; the table keeps the two ends and "
        "the log-log slope of each.",
        "report": "The papermill report of the icl_manifold study: MSE against the context "
        "length on log-log axes with the fitted and theory slopes, the networks' training at "
        "their tuned learning rates, the table, the claim checks and the tuning curves.",
    },
    report_params={
        "settings": ICL_SETTINGS,
        "methods": ICL["methods"],
    },
)
