# vngct: visual-necessity-gated continual instruction tuning (paper 1). A tiny LLaVA is built
# and aligned on the stream's captions (a cached artifact; at paper scale a local checkpoint
# instead); one tuning job per method picks its hyperparameters on the tuning seeds
# (`vngct_tune` builds them all); then one job per (method, seed) tunes the model through the
# stream with them; the random gate reads VNG-CT's routing rates of the same seed (and, when
# tuning, of VNG-CT's tuning record). The shared tail (tail.smk) writes the table, claims,
# provenance and report.
from reprolab.core.tuning import grid_points
from reprolab.studies.vngct.workflow_io import check_params as vngct_check_params
from reprolab.studies.vngct.workflow_io import matched_run as vngct_matched_run
from reprolab.studies.vngct.workflow_io import matched_tuning as vngct_matched_tuning

VNGCT = section("vngct")
VNGCT_INSTR = section("instr")
vngct_check_params(VNGCT, VNGCT_INSTR["streams"])
VNGCT_ENTRY = VNGCT_INSTR["streams"][VNGCT["stream"]]
# A synthetic stream is written under data/raw/instr by the instr family; a real one is a named
# folder, read as it is (see reprolab.preprocess.sources).
VNGCT_SOURCE = VNGCT_ENTRY.get("stream", f"data/raw/instr/{VNGCT['stream']}/stream")
VNGCT_INPUTS = {
    **({"stream": VNGCT_SOURCE} if "synthetic" in VNGCT_ENTRY else {}),
    "check": f"data/instr/{VNGCT['stream']}/check.json",
}
# Paper scale tunes a local checkpoint folder, read as it is like a real stream (no alignment
# job, not a declared input); smoke and ci align one tiny LLaVA, the checkpoint of every seed.
VNGCT_ALIGNED = "data/vngct/aligned"
VNGCT_MODEL = {} if VNGCT["checkpoint"] else {"model": VNGCT_ALIGNED}
VNGCT_TUNING = [f"data/vngct/tuning/{method}.json" for method in VNGCT["methods"]]
VNGCT_TUNE_RUNS = len(TUNING_SEEDS) * len(
    grid_points(VNGCT["tune"]["grid"][VNGCT["methods"][0]])
)
VNGCT_RUNS = [
    f"results/vngct/runs/{method}/seed{seed}/metrics.json"
    for method in VNGCT["methods"]
    for seed in SEEDS
]


rule vngct_align:
    input:
        **VNGCT_INPUTS,
    output:
        model=directory(VNGCT_ALIGNED),
    log:
        "logs/vngct/align.log",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 4000), runtime=(30, 30)),
    params:
        study=VNGCT,
        stream=f"{VNGCT_SOURCE}/stream.yaml",
    script:
        "../scripts/vngct_align.py"


rule vngct_tune_method:
    input:
        unpack(lambda wc: vngct_matched_tuning(wc.method)),
        **VNGCT_INPUTS,
        **VNGCT_MODEL,
        paper_data=paper_inputs("vngct"),
    output:
        tuning="data/vngct/tuning/{method}.json",
    log:
        "logs/vngct/tune/{method}.log",
    wildcard_constraints:
        method=wildcard_choices(VNGCT["methods"]),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 96000),
            runtime=(30 * VNGCT_TUNE_RUNS, 1440 * VNGCT_TUNE_RUNS),
            gpus=1,
        ),
    params:
        study=VNGCT,
        stream=f"{VNGCT_SOURCE}/stream.yaml",
        tuning_seeds=TUNING_SEEDS,
    script:
        "../scripts/vngct_tune.py"


rule vngct_run:
    input:
        unpack(
            lambda wc: vngct_matched_run(wc.method, int(wc.seed), "results/vngct/runs")
        ),
        **VNGCT_INPUTS,
        **VNGCT_MODEL,
        tuning="data/vngct/tuning/{method}.json",
        paper_data=paper_inputs("vngct"),
    output:
        metrics="results/vngct/runs/{method}/seed{seed}/metrics.json",
    log:
        "logs/vngct/run/{method}_seed{seed}.log",
    wildcard_constraints:
        method=wildcard_choices(VNGCT["methods"]),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 96000), runtime=(60, 1440), gpus=1),
    params:
        study=VNGCT,
        stream=f"{VNGCT_SOURCE}/stream.yaml",
    script:
        "../scripts/vngct_run.py"


register_study(
    "vngct",
    runs=VNGCT_RUNS,
    tuning=VNGCT_TUNING,
    captions={
        "table": "vngct: final and average accuracy (ranked among each task's answers), backward "
        "transfer, visual and text forgetting, the projector's and the language side's share of "
        "visual forgetting, and the share of each task's samples that updated the projector, "
        "for sequential fine-tuning, a frozen visual path, a random gate at VNG-CT's rate, EWC, "
        "VNG-CT without calibration and VNG-CT on the SynthCIT stream, mean ± std over seeds.",
        "curves": "vngct continual-learning curves (long format ``x,series,y``, the input of "
        "``dvc plots``): after training on task x of the stream, the mean accuracy over tasks "
        "1..x, one series per method, mean over seeds; the mean of a curve is the table's "
        "average accuracy, its last point the final accuracy.",
        "report": "The papermill report of the vngct study: the stream, the accuracy matrices, "
        "forgetting, the gate's routing per task and the projector swap analysis, the table and "
        "the claim checks and the tuning curves.",
    },
    report_params={
        "methods": VNGCT["methods"],
        "stream": f"{VNGCT_SOURCE}/stream.yaml",
    },
    report_inputs=VNGCT_INPUTS,
    provenance_values={"vngct": VNGCT, "instr": VNGCT_INSTR},
)
