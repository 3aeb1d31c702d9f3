# bidrive: normalizing-flow trajectory planning (paper 11). Per trained planner one tuning job
# (its learning rate on the tuning seeds; `snakemake bidrive_tune`), then one for the
# distillation's learning rate (it distils the tuned teacher into the tuned student), per seed one job that
# trains every planner, distils the teacher into the student and plans and scores the test
# scenes with every row; the shared tail (tail.smk) writes the table, claims, provenance and
# report. The study runs on the first `seed_count` seeds (docs/studies/bidrive.md).
from reprolab.studies.bidrive.workflow_io import TRAINED as BIDRIVE_MODELS
from reprolab.studies.bidrive.workflow_io import check_params as bidrive_check_params
from reprolab.studies.bidrive.workflow_io import row_names as bidrive_row_names

BIDRIVE = section("bidrive")
bidrive_check_params(BIDRIVE)
BIDRIVE_SEEDS = SEEDS[: BIDRIVE["seed_count"]]
BIDRIVE_MODEL_TUNING = expand(
    "data/bidrive/tuning/{bidrive_model}.json", bidrive_model=BIDRIVE_MODELS
)
BIDRIVE_TUNING = [*BIDRIVE_MODEL_TUNING, "data/bidrive/tuning/distilled.json"]
BIDRIVE_RUNS = expand(
    "results/bidrive/runs/seed{seed}/{name}",
    seed=BIDRIVE_SEEDS,
    name=["metrics.json", "plans.h5", "curves.h5"],
)
# Minutes per trained planner at the evaluation budget (smoke and ci, paper): seconds on one
# core at smoke scale; hours on a GPU for the paper's planners.
BIDRIVE_MODEL_MINUTES = (1, 720)


rule bidrive_tune_model:
    input:
        paper_data=paper_inputs("bidrive"),
    output:
        tuned="data/bidrive/tuning/{bidrive_model}.json",
    log:
        "logs/bidrive/tune/{bidrive_model}.log",
    wildcard_constraints:
        bidrive_model=wildcard_choices(BIDRIVE_MODELS),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(2000, 64000),
            runtime=tuple(
                len(TUNING_SEEDS) * len(BIDRIVE["tune"]["grid"]["teacher"]["lr"]) * m
                for m in BIDRIVE_MODEL_MINUTES
            ),
            gpus=1,
        ),
    params:
        study=BIDRIVE,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/bidrive_tune.py"


rule bidrive_tune_distillation_seed:
    input:
        models=expand(
            "data/bidrive/tuning/{bidrive_model}.json",
            bidrive_model=["teacher", "student"],
        ),
        paper_data=paper_inputs("bidrive"),
    output:
        scores="data/bidrive/tuning/distilled/seed{tuning_seed}.json",
    log:
        "logs/bidrive/tune/distilled_seed{tuning_seed}.log",
    wildcard_constraints:
        tuning_seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(2000, 64000),
            runtime=tuple(
                (2 + len(BIDRIVE["tune"]["grid"]["distilled"]["lr"])) * m
                for m in BIDRIVE_MODEL_MINUTES
            ),
            gpus=1,
        ),
    params:
        study=BIDRIVE,
    script:
        "../scripts/bidrive_tune_distillation_seed.py"


rule bidrive_tune_distillation:
    input:
        scores=expand(
            "data/bidrive/tuning/distilled/seed{tuning_seed}.json",
            tuning_seed=TUNING_SEEDS,
        ),
    output:
        tuned="data/bidrive/tuning/distilled.json",
    log:
        "logs/bidrive/tune/distilled.log",
    localrule: True
    conda:
        "../../envs/torch.yaml"
    params:
        study=BIDRIVE,
    script:
        "../scripts/bidrive_tune_distillation.py"


rule bidrive_run:
    input:
        tuning=BIDRIVE_TUNING,
        paper_data=paper_inputs("bidrive"),
    output:
        metrics="results/bidrive/runs/seed{seed}/metrics.json",
        plans="results/bidrive/runs/seed{seed}/plans.h5",
        curves="results/bidrive/runs/seed{seed}/curves.h5",
    log:
        "logs/bidrive/run/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 64000),
            runtime=tuple(8 * m for m in BIDRIVE_MODEL_MINUTES),
            gpus=1,
        ),
    params:
        study=BIDRIVE,
    script:
        "../scripts/bidrive_run.py"


register_study(
    "bidrive",
    runs=BIDRIVE_RUNS,
    tuning=BIDRIVE_TUNING,
    seeds=BIDRIVE_SEEDS,
    captions={
        "table": "Trajectory planners on synthetic driving scenes (constant velocity, MLP "
        "regression, flow matching with heuristic selection, the autoregressive-flow teacher "
        "and the coupling-flow student with likelihood selection, the distilled student, and "
        "latent optimisation): synthetic PDMS and its sub-scores, collisions, minADE and ADE, "
        "NLL of expert plans, sequential passes per plan; mean ± std over seeds.",
        "curves": "bidrive training curves (long format ``x,series,y``): each trained "
        "planner's loss per logged window (series = the planner, x = step), means over seeds.",
        "report": "The papermill report of the bidrive study: planned trajectories drawn on "
        "test scenes, PDMS and sub-score bars, PDMS per scene kind, collisions, training "
        "curves, the table and the claim checks.",
    },
    report_params={"rows": list(bidrive_row_names(BIDRIVE).values())},
)
