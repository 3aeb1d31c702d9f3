# ntm: normalizing trajectory models (paper 10). Per trained method one tuning job (its learning
# rate on the tuning seeds; consistency distillation after flow matching, whose teacher it
# distils; `snakemake ntm_tune`), per dataset and seed one job that trains and scores every row;
# the shared tail (tail.smk) writes the table, claims, provenance and report. The study runs on
# the first `seed_count` seeds: it is compute-bound (docs/studies/ntm.md).
from reprolab.studies.ntm.workflow_io import TUNED_METHODS as NTM_METHODS
from reprolab.studies.ntm.workflow_io import check_params as ntm_check_params
from reprolab.studies.ntm.workflow_io import row_names as ntm_row_names

NTM = section("ntm")
ntm_check_params(NTM)
NTM_DATASETS = list(NTM["datasets"])
NTM_SEEDS = SEEDS[: NTM["seed_count"]]
NTM_TUNING = expand("data/ntm/tuning/{ntm_method}.json", ntm_method=NTM_METHODS)
NTM_RUNS = expand(
    "results/ntm/runs/{ntm_dataset}/seed{seed}/{name}",
    ntm_dataset=NTM_DATASETS,
    seed=NTM_SEEDS,
    name=["metrics.json", "samples.h5", "curves.h5"],
)
# Minutes per trained model at the evaluation budget (smoke and ci, paper): seconds on one core
# at smoke scale; the paper's image models train for hours on one GPU.
NTM_MODEL_MINUTES = (1, 240)


rule ntm_tune_method:
    input:
        paper_data=paper_inputs("ntm", NTM["tune"]["dataset"]),
        teacher=lambda w: (["data/ntm/tuning/fm.json"] if w.ntm_method == "cd" else []),
    output:
        tuned="data/ntm/tuning/{ntm_method}.json",
    log:
        "logs/ntm/tune/{ntm_method}.log",
    wildcard_constraints:
        ntm_method=wildcard_choices(NTM_METHODS),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(2000, 32000),
            runtime=tuple(
                2 * len(TUNING_SEEDS) * len(NTM["tune"]["grid"]["ntm"]["lr"]) * m
                for m in NTM_MODEL_MINUTES
            ),
            gpus=1,
        ),
    params:
        study=NTM,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/ntm_tune.py"


rule ntm_run:
    input:
        paper_data=lambda w: paper_inputs("ntm", w.ntm_dataset),
        tuning=NTM_TUNING,
    output:
        metrics="results/ntm/runs/{ntm_dataset}/seed{seed}/metrics.json",
        samples="results/ntm/runs/{ntm_dataset}/seed{seed}/samples.h5",
        curves="results/ntm/runs/{ntm_dataset}/seed{seed}/curves.h5",
    log:
        "logs/ntm/run/{ntm_dataset}_seed{seed}.log",
    wildcard_constraints:
        ntm_dataset=wildcard_choices(NTM_DATASETS),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(2000, 32000),
            runtime=tuple(6 * m for m in NTM_MODEL_MINUTES),
            gpus=1,
        ),
    params:
        study=NTM,
    script:
        "../scripts/ntm_run.py"


register_study(
    "ntm",
    runs=NTM_RUNS,
    tuning=NTM_TUNING,
    seeds=NTM_SEEDS,
    captions={
        "table": "Few-step generation with K reverse steps: flow matching (Euler, many and K "
        "steps), Gaussian steps, consistency distillation, the normalizing trajectory model and "
        "its self-distilled denoiser: sliced Wasserstein and MMD to held-out data, mode "
        "coverage and support, exact trajectory NLL, network evaluations; mean ± std over "
        "seeds.",
        "curves": "ntm training curves (long format ``x,series,y``): each trained model's loss "
        "per logged window (series ``<dataset>/<model>``, x = step), means over seeds.",
        "report": "The papermill report of the ntm study: samples of every method beside the "
        "data, metrics per method and seed, training curves, the table and the claim checks.",
    },
    report_params={
        "datasets": NTM_DATASETS,
        "rows": list(ntm_row_names(NTM).values()),
    },
)
