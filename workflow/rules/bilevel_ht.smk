# bilevel_ht: decentralised bilevel optimisation under heavy-tailed noise (paper 19). Per method
# one tuning job (its step size on the tuning seeds), per dataset, topology and seed one job that
# runs every noise setting and method at the tuned steps; the shared tail (tail.smk) writes the
# table, claims, provenance and report.
BILEVEL_HT = section("bilevel_ht")
BILEVEL_HT_DATASETS = list(BILEVEL_HT["datasets"])
BILEVEL_HT_METHODS = list(BILEVEL_HT["methods"])
BILEVEL_HT_TUNING = expand(
    "data/bilevel_ht/tuning/{bht_method}.json", bht_method=BILEVEL_HT_METHODS
)
BILEVEL_HT_RUNS = expand(
    "results/bilevel_ht/runs/{bht_dataset}/{bht_topology}/seed{seed}/metrics.json",
    bht_dataset=BILEVEL_HT_DATASETS,
    bht_topology=BILEVEL_HT["topologies"],
    seed=SEEDS,
)
BILEVEL_HT_CURVES = [
    run.replace("metrics.json", "curves.h5") for run in BILEVEL_HT_RUNS
]


rule bilevel_ht_tune_method:
    output:
        tuned="data/bilevel_ht/tuning/{bht_method}.json",
    log:
        "logs/bilevel_ht/tune/{bht_method}.log",
    wildcard_constraints:
        bht_method=wildcard_choices(BILEVEL_HT_METHODS),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(1000, 4000), runtime=(30, 240)),
    params:
        study=BILEVEL_HT,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/bilevel_ht_tune.py"


rule bilevel_ht_run:
    input:
        tuning=BILEVEL_HT_TUNING,
    output:
        metrics="results/bilevel_ht/runs/{bht_dataset}/{bht_topology}/seed{seed}/metrics.json",
        curves="results/bilevel_ht/runs/{bht_dataset}/{bht_topology}/seed{seed}/curves.h5",
    log:
        "logs/bilevel_ht/run/{bht_dataset}_{bht_topology}_seed{seed}.log",
    wildcard_constraints:
        bht_dataset=wildcard_choices(BILEVEL_HT_DATASETS),
        bht_topology=wildcard_choices(BILEVEL_HT["topologies"]),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(1000, 4000), runtime=(30, 240)),
    params:
        study=BILEVEL_HT,
    script:
        "../scripts/bilevel_ht_run.py"


register_study(
    "bilevel_ht",
    runs=[*BILEVEL_HT_RUNS, *BILEVEL_HT_CURVES],
    tuning=BILEVEL_HT_TUNING,
    captions={
        "table": "Decentralised bilevel methods (D-SGD, D-STORM, D-Clip at three thresholds, "
        "D-NSGDM, D-NSVRB; step sizes tuned on the tuning seeds) under Gaussian, Student-t (ν = 1.5) and Pareto (α = 1.5) oracle noise "
        "on a ring and an exponential graph: final upper-level loss, stationarity (mean ± std "
        "over non-diverged seeds) and the fraction of diverged seeds.",
        "curves": "bilevel_ht convergence curves (long format ``x,series,y``, the input of "
        "``dvc plots``): the exact upper-level loss F(λ̄) at every evaluation checkpoint "
        "(x = iteration = gossip round), one series per ``<topology>/<noise>/<method>``, mean "
        "over the seeds that did not diverge (a series with none has no rows).",
        "report": "The papermill report of the bilevel_ht study: convergence of the upper-level "
        "loss and stationarity per topology and noise, divergences, the table and the claim "
        "checks.",
    },
    report_params={
        "datasets": BILEVEL_HT_DATASETS,
        "topologies": BILEVEL_HT["topologies"],
        "noises": list(BILEVEL_HT["noises"]),
        "methods": list(BILEVEL_HT["methods"]),
        "method": BILEVEL_HT["claims"]["method"],
    },
)
