# overcorrection: over-corrective external information (paper 8). One job trains each trained
# reader (a linear-attention model, a small GPT-2) on each seed's prior, the tuning seeds
# included (a pretrained reader, a local LLM folder reading a released set at paper scale, is
# not trained); one tuning job per reader chooses MMR's lambda and the theory rule per channel
# on the tuning seeds (`snakemake overcorrection_tune`); one job per seed measures every reader,
# channel, selector and k. The tuning and run jobs ask for a GPU, which the LLMs need at paper
# scale. The shared tail (tail.smk) writes the table, claims, provenance and report.
from reprolab.studies.overcorrection import workflow_io as overcorrection_io

OVERCORRECTION = section("overcorrection")
overcorrection_io.check_params(OVERCORRECTION)
OVERCORRECTION_READERS = list(OVERCORRECTION["readers"])
OVERCORRECTION_TRAINED = overcorrection_io.trained_readers(OVERCORRECTION)
OVERCORRECTION_WEIGHTS = "data/overcorrection/readers/{reader}/seed{seed}.safetensors"
OVERCORRECTION_RECORD = "data/overcorrection/readers/{reader}/seed{seed}.json"
OVERCORRECTION_TUNING_OF = "data/overcorrection/tuning/{method}.json"
OVERCORRECTION_TUNING = [
    OVERCORRECTION_TUNING_OF.format(method=method)
    for method in overcorrection_io.tuned_methods(OVERCORRECTION)
]
OVERCORRECTION_RUNS = expand(
    "results/overcorrection/runs/seed{seed}/metrics.json", seed=SEEDS
)


rule overcorrection_train:
    output:
        weights=OVERCORRECTION_WEIGHTS,
        record=OVERCORRECTION_RECORD,
    log:
        "logs/overcorrection/train/{reader}/seed{seed}.log",
    wildcard_constraints:
        reader=wildcard_choices(OVERCORRECTION_TRAINED),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(2000, 8000), runtime=(10, 240)),
    params:
        study={key: OVERCORRECTION[key] for key in ("task", "readers")},
    script:
        "../scripts/overcorrection_train.py"


rule overcorrection_tune_reader:
    input:
        weights=lambda wc: (
            expand(OVERCORRECTION_WEIGHTS, reader=wc.reader, seed=TUNING_SEEDS)
            if wc.reader in OVERCORRECTION_TRAINED
            else []
        ),
        paper_data=lambda wc: paper_inputs("overcorrection", wc.reader),
    output:
        tuned=[
            OVERCORRECTION_TUNING_OF.format(method=method)
            for method in overcorrection_io.tuned_methods(OVERCORRECTION, "{reader}")
        ],
    log:
        "logs/overcorrection/tune/{reader}.log",
    wildcard_constraints:
        reader=wildcard_choices(OVERCORRECTION_READERS),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(2000, 64000), runtime=(10, 480), gpus=1),
    params:
        study=OVERCORRECTION,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/overcorrection_tune.py"


rule overcorrection_run:
    input:
        weights=expand(
            OVERCORRECTION_WEIGHTS, reader=OVERCORRECTION_TRAINED, seed="{seed}"
        ),
        records=expand(
            OVERCORRECTION_RECORD, reader=OVERCORRECTION_TRAINED, seed="{seed}"
        ),
        tuned=OVERCORRECTION_TUNING,
        paper_data=paper_inputs("overcorrection", *OVERCORRECTION_READERS),
    output:
        metrics="results/overcorrection/runs/seed{seed}/metrics.json",
    log:
        "logs/overcorrection/run/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(2000, 64000), runtime=(10, 720), gpus=1),
    params:
        study=OVERCORRECTION,
    script:
        "../scripts/overcorrection_run.py"


register_study(
    "overcorrection",
    runs=OVERCORRECTION_RUNS,
    tuning=OVERCORRECTION_TUNING,
    captions={
        "table": "overcorrection: error (MSE per answer coordinate), over- and "
        "under-correction rates and the R² of the theory's predicted correction, per trained "
        "reader (linear attention, small GPT-2), channel (ICL, RAG, memory), selector and "
        "number of items k; mean ± std over seeds.",
        "curves": "overcorrection curves (long format ``x,series,y``): along k (x), the MSE "
        "and over-correction rate of every ``<reader>/<channel>/<selector>``, means over seeds.",
        "report": "The papermill report of the overcorrection study: the readers' training, "
        "their calibration, error and correction rates against k per channel, predicted "
        "against measured overshoot, the table and the claim checks and the tuning grid.",
    },
    report_params={
        "readers": OVERCORRECTION_READERS,
        "channels": list(OVERCORRECTION["channels"]),
        "selectors": list(OVERCORRECTION["selectors"]),
    },
    provenance_values={"overcorrection": OVERCORRECTION},
)
