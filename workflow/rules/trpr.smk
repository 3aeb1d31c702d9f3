# trpr: trust-region routing for MoE adapters in class-incremental learning (paper 4). Per
# benchmark one data job (DigitStyles generated, or a released benchmark read from its root);
# one backbone pre-training job unless a checkpoint folder is named; per tuned row and
# benchmark one tuning job (its grid on the tuning seeds, held-out training images;
# `snakemake trpr_tune` runs them all); per benchmark and seed one job that trains every row
# through the seed's class order; the shared tail (tail.smk) writes the table, claims,
# provenance and report.
from reprolab.core.paper_data import TRPR_BACKBONE as TRPR_BACKBONE_KEY
from reprolab.core.tuning import grid_points
from reprolab.studies.trpr.workflow_io import check_params as trpr_check_params
from reprolab.studies.trpr.workflow_io import rate_source as trpr_rate_source
from reprolab.studies.trpr.workflow_io import tuned_rows as trpr_tuned_rows

TRPR = section("trpr")
trpr_check_params(TRPR)
TRPR_BENCHMARKS = list(TRPR["benchmarks"])
TRPR_BACKBONE = TRPR["backbone"]["checkpoint"] or "data/trpr/backbone"
TRPR_TUNED = trpr_tuned_rows(TRPR)
TRPR_TUNING = expand(
    "data/trpr/tuning/{benchmark}/{row}.json", benchmark=TRPR_BENCHMARKS, row=TRPR_TUNED
)
TRPR_RUNS = expand(
    "results/trpr/runs/{benchmark}/seed{seed}/metrics.json",
    benchmark=TRPR_BENCHMARKS,
    seed=SEEDS,
)
# Minutes per row trained through a stream (smoke and ci, paper): seconds on one core at smoke
# scale; at paper scale a ViT-B/16 with adapters through ten tasks takes about an hour on a GPU.
TRPR_FIT_MINUTES = (1, 60)
TRPR_TUNE_FITS = len(TUNING_SEEDS) * max(
    [len(grid_points(TRPR["tune"]["grid"][row])) for row in TRPR_TUNED], default=0
)


rule trpr_data:
    input:
        paper_data=lambda w: paper_inputs("trpr", w.benchmark),
    output:
        images="data/trpr/{benchmark}/images.h5",
    log:
        "logs/trpr/data/{benchmark}.log",
    wildcard_constraints:
        benchmark=wildcard_choices(TRPR_BENCHMARKS),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 64000), runtime=(5, 120)),
    params:
        spec=lambda wc: TRPR["benchmarks"][wc.benchmark],
    script:
        "../scripts/trpr_data.py"


rule trpr_pretrain:
    input:
        images="data/trpr/digitstyles/images.h5",
    output:
        backbone=directory("data/trpr/backbone"),
    log:
        "logs/trpr/pretrain.log",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(2000, 8000), runtime=(15, 60)),
    params:
        backbone=TRPR["backbone"],
        pretrain=TRPR["pretrain"],
    script:
        "../scripts/trpr_pretrain.py"


rule trpr_tune_row:
    input:
        backbone=TRPR_BACKBONE,
        images="data/trpr/{benchmark}/images.h5",
        # a row that tunes another knob trains at the rate the rate source's record chose
        rate=lambda w: [
            f"data/trpr/tuning/{w.benchmark}/{source}.json"
            for source in filter(None, [trpr_rate_source(w.row)])
        ],
        paper_data=paper_inputs("trpr", TRPR_BACKBONE_KEY),
    output:
        tuned="data/trpr/tuning/{benchmark}/{row}.json",
    log:
        "logs/trpr/tune/{benchmark}/{row}.log",
    wildcard_constraints:
        benchmark=wildcard_choices(TRPR_BENCHMARKS),
        row=wildcard_choices(TRPR_TUNED),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 64000),
            runtime=tuple(TRPR_TUNE_FITS * m for m in TRPR_FIT_MINUTES),
            gpus=1,
        ),
    params:
        study=TRPR,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/trpr_tune.py"


rule trpr_run:
    input:
        backbone=TRPR_BACKBONE,
        images="data/trpr/{benchmark}/images.h5",
        tuning=expand("data/trpr/tuning/{{benchmark}}/{row}.json", row=TRPR_TUNED),
        paper_data=paper_inputs("trpr", TRPR_BACKBONE_KEY),
    output:
        metrics="results/trpr/runs/{benchmark}/seed{seed}/metrics.json",
    log:
        "logs/trpr/run/{benchmark}/seed{seed}.log",
    wildcard_constraints:
        benchmark=wildcard_choices(TRPR_BENCHMARKS),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 64000),
            runtime=tuple(len(TRPR["rows"]) * m for m in TRPR_FIT_MINUTES),
            gpus=1,
        ),
    params:
        study=TRPR,
    script:
        "../scripts/trpr_run.py"


register_study(
    "trpr",
    runs=TRPR_RUNS,
    tuning=TRPR_TUNING,
    captions={
        "table": "TRPR (the card's training-time projection and gate; the inference-time "
        "projection the prototype found) against replay-free PEFT baselines on a frozen ViT: "
        "average and final accuracy, forgetting, routing drift of old-task images and trainable "
        "parameters per benchmark, mean ± std over seeds.",
        "curves": "trpr curves (long format ``x,series,y``): accuracy over seen tasks after "
        "each task (x = tasks learnt, series ``<benchmark>/<row>``), and the drift analysis "
        "(``<benchmark>/<row>/loss_rate``: net loss rate per drift quantile, x = quantile); "
        "means over seeds.",
        "report": "The papermill report of the trpr study: the table and claim checks, accuracy "
        "matrices per task, the loss by drift quantile, routing restored, and the gate on old "
        "classes.",
    },
    report_params={"rows": TRPR["rows"], "benchmarks": TRPR_BENCHMARKS},
)
