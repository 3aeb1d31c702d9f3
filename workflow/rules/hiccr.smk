# hiccr: hierarchical credit reassignment for multimodal RLVR (paper 3). The instr family writes
# the VisArith stream; one warm start trains and gates the tiny LLaVA every run starts from
# (`hiccr_sft`); one tuning job per base algorithm picks its learning rate on the tuning seeds
# (`snakemake hiccr_tune` runs them all); then one job per (method, seed) runs RL and measures
# the test items. The shared tail (tail.smk) writes the table, claims, provenance and report.
from reprolab.core.tuning import grid_points
from reprolab.studies.hiccr.workflow_io import check_params as hiccr_check_params
from reprolab.studies.hiccr.workflow_io import tuned_bases as hiccr_tuned_bases

HICCR = section("hiccr")
HICCR_INSTR = section("instr")
hiccr_check_params(HICCR, HICCR_INSTR["streams"])
if "benchmarks" in HICCR:
    # Paper scale: the released checkpoint and benchmark files (reprolab.core.paper_data).
    HICCR_STREAM_FILE = ""
    HICCR_INPUTS = {"paper_data": paper_inputs("hiccr")}
else:
    HICCR_ENTRY = HICCR_INSTR["streams"][HICCR["stream"]]
    # A synthetic stream is written under data/raw/instr by the instr family; a real one is a
    # named folder, read as it is (see reprolab.preprocess.sources).
    HICCR_SOURCE = HICCR_ENTRY.get("stream", f"data/raw/instr/{HICCR['stream']}/stream")
    HICCR_STREAM_FILE = f"{HICCR_SOURCE}/stream.yaml"
    HICCR_INPUTS = {
        **({"stream": HICCR_SOURCE} if "synthetic" in HICCR_ENTRY else {}),
        "check": f"data/instr/{HICCR['stream']}/check.json",
    }
HICCR_SFT = "data/hiccr/sft/model"
HICCR_SFT_RECORD = "data/hiccr/sft/record.json"
HICCR_TUNING = [f"data/hiccr/tuning/{base}.json" for base in hiccr_tuned_bases(HICCR)]
HICCR_RUNS = [
    f"results/hiccr/runs/{method}/seed{seed}/{name}"
    for method in HICCR["methods"]
    for seed in SEEDS
    for name in ("metrics.json", "curves.h5")
]
HICCR_TUNE_RUNS = len(TUNING_SEEDS) * max(
    len(grid_points(grid)) for grid in HICCR["tune"]["grid"].values()
)
# Minutes per RL run (smoke and ci, paper): under a minute on one core at smoke scale.
HICCR_RUN_MINUTES = (5, 600)


rule hiccr_sft:
    input:
        **HICCR_INPUTS,
    output:
        model=directory(HICCR_SFT),
        record=HICCR_SFT_RECORD,
    log:
        "logs/hiccr/sft.log",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 96000), runtime=(30, 1440), gpus=1),
    params:
        study=HICCR,
        stream=HICCR_STREAM_FILE,
    script:
        "../scripts/hiccr_sft.py"


rule hiccr_tune_base:
    input:
        **HICCR_INPUTS,
        model=HICCR_SFT,
    output:
        tuning="data/hiccr/tuning/{base}.json",
    log:
        "logs/hiccr/tune/{base}.log",
    wildcard_constraints:
        base=wildcard_choices(hiccr_tuned_bases(HICCR)),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 96000),
            runtime=tuple(HICCR_TUNE_RUNS * m for m in HICCR_RUN_MINUTES),
            gpus=1,
        ),
    params:
        study=HICCR,
        stream=HICCR_STREAM_FILE,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/hiccr_tune.py"


rule hiccr_run:
    input:
        **HICCR_INPUTS,
        model=HICCR_SFT,
        sft_record=HICCR_SFT_RECORD,
        tuning=HICCR_TUNING,
    output:
        metrics="results/hiccr/runs/{method}/seed{seed}/metrics.json",
        curves="results/hiccr/runs/{method}/seed{seed}/curves.h5",
    log:
        "logs/hiccr/run/{method}_seed{seed}.log",
    wildcard_constraints:
        method=wildcard_choices(HICCR["methods"]),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 96000),
            runtime=HICCR_RUN_MINUTES,
            gpus=1,
        ),
    params:
        study=HICCR,
        stream=HICCR_STREAM_FILE,
    script:
        "../scripts/hiccr_run.py"


register_study(
    "hiccr",
    runs=HICCR_RUNS,
    tuning=HICCR_TUNING,
    captions={
        "table": "hiccr: test accuracy and the three grounding measures (image attention at the "
        "reading tokens, the image share of the input gradient, functional dependence on the "
        "image) after RL for GRPO, random token scaling, HiCCR's token and trajectory weights "
        "alone and together, and Dr. GRPO without and with HiCCR, beside the warm start they "
        "all begin from; HiCCR's extra counted operations per update; mean ± std over seeds.",
        "curves": "hiccr grounding curves (long format ``x,series,y``): along RL steps (x), "
        "each method's accuracy and grounding measures on the curve items "
        "(``<method>_<measure>``), means over seeds.",
        "report": "The papermill report of the hiccr study: the warm start and its gates, the "
        "accuracy and grounding curves along RL, the table and the claim checks, HiCCR's "
        "overhead and the tuning curves.",
    },
    report_params={"methods": HICCR["methods"], "sft_record": HICCR_SFT_RECORD},
    report_inputs={"sft_record": HICCR_SFT_RECORD},
    provenance_values={"hiccr": HICCR, "instr": HICCR_INSTR},
)
