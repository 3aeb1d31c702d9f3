# norm_enforcement: enforcement mechanisms that agents cannot exploit (paper 14).
# Per environment one tuning job (`snakemake norm_enforcement_tune`: every fined mechanism's
# base fine on the tuning seeds); per evaluation seed one job that plays every mechanism in
# every environment and the population sweep; the shared tail (tail.smk) writes the table,
# claims, provenance and report.
from reprolab.studies.norm_enforcement.workflow_io import (
    check_params as norm_enforcement_check_params,
)
from reprolab.studies.norm_enforcement.workflow_io import (
    tuned_mechanisms as norm_enforcement_tuned,
)

NORM_ENFORCEMENT = section("norm_enforcement")
norm_enforcement_check_params(NORM_ENFORCEMENT)
NORM_ENFORCEMENT_TUNED = norm_enforcement_tuned(NORM_ENFORCEMENT)
NORM_ENFORCEMENT_TUNING = expand(
    "data/norm_enforcement/tuning/{environment}/{mechanism}.json",
    environment=NORM_ENFORCEMENT["environments"],
    mechanism=NORM_ENFORCEMENT_TUNED,
)
NORM_ENFORCEMENT_RUNS = expand(
    "results/norm_enforcement/runs/seed{seed}/{name}",
    seed=SEEDS,
    name=["metrics.json", "episodes.h5"],
)
# Minutes per job (smoke and ci, paper): a numpy simulation takes seconds per episode; at paper
# scale a language model answers every adaptive seat every round, on the GPU every scale asks
# for (the cluster profile sends a rule to the GPU partition by its name, whatever the scale).
NORM_ENFORCEMENT_RUNTIME = (30, 1440)


rule norm_enforcement_tune_environment:
    input:
        paper_data=paper_inputs("norm_enforcement"),
    output:
        tuned=expand(
            "data/norm_enforcement/tuning/{{environment}}/{mechanism}.json",
            mechanism=NORM_ENFORCEMENT_TUNED,
        ),
    log:
        "logs/norm_enforcement/tune/{environment}.log",
    wildcard_constraints:
        environment=wildcard_choices(NORM_ENFORCEMENT["environments"]),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(
            mem_mb=(2000, 64000),
            runtime=NORM_ENFORCEMENT_RUNTIME,
            gpus=1,
        ),
    params:
        study=NORM_ENFORCEMENT,
        seeds=TUNING_SEEDS,
        mechanisms=NORM_ENFORCEMENT_TUNED,
    script:
        "../scripts/norm_enforcement_tune.py"


rule norm_enforcement_run:
    input:
        paper_data=paper_inputs("norm_enforcement"),
        tuning=NORM_ENFORCEMENT_TUNING,
    output:
        metrics="results/norm_enforcement/runs/seed{seed}/metrics.json",
        episodes="results/norm_enforcement/runs/seed{seed}/episodes.h5",
    log:
        "logs/norm_enforcement/run/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(
            mem_mb=(2000, 64000),
            runtime=NORM_ENFORCEMENT_RUNTIME,
            gpus=1,
        ),
    params:
        study=NORM_ENFORCEMENT,
    script:
        "../scripts/norm_enforcement_run.py"


register_study(
    "norm_enforcement",
    runs=NORM_ENFORCEMENT_RUNS,
    tuning=NORM_ENFORCEMENT_TUNING,
    captions={
        "table": "Enforcement mechanisms (None, FixedFine, ReportSanction, WindowRep, Robust and "
        "its two ablations) in three environments with the main population: violation rate, "
        "exploitation gain, false sanctions of compliant agents, compliant agents suspended, "
        "enforcement cost, welfare and the false-report share, per round, mean ± std over seeds.",
        "curves": "norm_enforcement payoff trajectories (long format ``x,series,y``): the mean "
        "cumulative net payoff per agent of each type (series environment/mechanism/type) at the "
        "end of each window of rounds, mean over seeds.",
        "report": "The papermill report of the norm_enforcement study: payoff trajectories per "
        "agent type, sanctions over time, false reports over time, the population sweep, the "
        "table and the claim checks.",
    },
    report_params={
        "environments": list(NORM_ENFORCEMENT["environments"]),
        "mechanisms": list(NORM_ENFORCEMENT["methods"]),
    },
)
