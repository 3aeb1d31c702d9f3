# ssg: Sparse Support Grounding MIL (paper 7). Per method one tuning job (its grid trained on the
# tuning seeds' training bags of `tune.dataset`, scored on a validation split; a core.tuning
# record; `ssg_tune` builds them all); per dataset and seed one job trains every method with its
# selected values (SynthMIL regimes and EndoSeq are generated in the job; the wsi dataset reads
# the tile features of data/wsi/<cohort>/features); the shared tail (tail.smk) writes the table,
# claims, tuning summary, provenance and report.
from reprolab.core.tuning import grid_points
from reprolab.studies.ssg.tune import check_params as ssg_check_params
from reprolab.studies.ssg import workflow_io as ssg_io

SSG = section("ssg")
ssg_check_params(SSG)
SSG_DATASETS = ssg_io.datasets(SSG)
SSG_PLAN = ssg_io.run_plan(SSG)
SSG_RUNS_ROOT = "results/ssg/runs"
SSG_WSI_ROOTS = ("data/wsi", "data/raw/wsi")
SSG_RUNS = [
    f"{SSG_RUNS_ROOT}/{dataset}/{method}/seed{seed}/metrics.json"
    for dataset, method in SSG_PLAN
    for seed in SEEDS
]
SSG_TABLE = list(SSG["datasets"])
SSG_SWEEP = [name for name in SSG_DATASETS if name not in SSG_TABLE]
SSG_SWEEP_METHODS = [
    method for name, method in SSG_PLAN if SSG_SWEEP and name == SSG_SWEEP[0]
]
SSG_TUNING = expand("data/ssg/tuning/{method}.json", method=SSG["methods"])
SSG_TUNE_SPEC = SSG["datasets"][SSG["tune"]["dataset"]]
SSG_TUNE_RUNS = len(TUNING_SEEDS) * len(
    grid_points(SSG["tune"]["grid"][SSG["methods"][0]])
)
SSG_REPORT_WSI = ssg_io.report_wsi(SSG["datasets"], *SSG_WSI_ROOTS)
SSG_CURVES = [
    f"{SSG_RUNS_ROOT}/{dataset}/{method}/seed{seed}/curves.h5"
    for dataset in SSG_TABLE
    for method in SSG["methods"]
    for seed in SEEDS
]


rule ssg_tune_method:
    input:
        **ssg_io.wsi_inputs(SSG_TUNE_SPEC, *SSG_WSI_ROOTS),
        paper_data=paper_inputs("ssg", SSG["tune"]["dataset"]),
    output:
        tuning="data/ssg/tuning/{method}.json",
    log:
        "logs/ssg/tune/{method}.log",
    wildcard_constraints:
        method=wildcard_choices(SSG["methods"]),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 32000),
            runtime=(15 * SSG_TUNE_RUNS, 120 * SSG_TUNE_RUNS),
            gpus=1,
        ),
    params:
        spec=SSG_TUNE_SPEC,
        wsi=ssg_io.wsi_paths(SSG_TUNE_SPEC, *SSG_WSI_ROOTS),
        model=SSG["model"],
        train=SSG["train"],
        tune=SSG["tune"],
        seeds=TUNING_SEEDS,
    script:
        "../scripts/ssg_tune.py"


rule ssg_train:
    input:
        unpack(lambda wc: ssg_io.wsi_inputs(SSG_DATASETS[wc.dataset], *SSG_WSI_ROOTS)),
        tuning=SSG_TUNING,
        paper_data=lambda wc: paper_inputs("ssg", wc.dataset),
    output:
        **ssg_io.run_files(SSG_RUNS_ROOT, SSG["methods"]),
    log:
        "logs/ssg/train/{dataset}_seed{seed}.log",
    wildcard_constraints:
        dataset=wildcard_choices(SSG_TABLE),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 32000), runtime=(120, 120), gpus=1),
    params:
        spec=lambda wc: SSG_DATASETS[wc.dataset],
        wsi=lambda wc: ssg_io.wsi_paths(SSG_DATASETS[wc.dataset], *SSG_WSI_ROOTS),
        methods=SSG["methods"],
        model=SSG["model"],
        train=SSG["train"],
    script:
        "../scripts/ssg_train.py"


rule ssg_train_sweep:
    input:
        tuning=expand("data/ssg/tuning/{method}.json", method=SSG_SWEEP_METHODS),
    output:
        **ssg_io.run_files(SSG_RUNS_ROOT, SSG_SWEEP_METHODS),
    log:
        "logs/ssg/train/{dataset}_seed{seed}.log",
    wildcard_constraints:
        dataset=wildcard_choices(SSG_SWEEP) or "no_sweep",
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 32000), runtime=(60, 120), gpus=1),
    params:
        spec=lambda wc: SSG_DATASETS[wc.dataset],
        wsi={},
        methods=SSG_SWEEP_METHODS,
        model=SSG["model"],
        train=SSG["train"],
    script:
        "../scripts/ssg_train.py"


register_study(
    "ssg",
    runs=SSG_RUNS + SSG_CURVES,
    tuning=SSG_TUNING,
    captions={
        "table": "SSG-UOT against MIL baselines (mean/max pooling, gated ABMIL, CLAM-SB-like, "
        "TransMIL-like, NN-grounding, balanced OT) on SynthMIL regimes, EndoSeq and synthetic "
        "whole-slide images: bag AUC, bag accuracy and instance-localisation AUC, mean ± std "
        "over seeds.",
        "curves": "ssg learning curves (long format ``x,series,y``, the input of ``dvc plots``): "
        "test bag AUC after every epoch, one series per ``<dataset>/<method>`` of the table's "
        "datasets, mean over seeds; the last point of a series is its bag AUC in the table.",
        "report": "The papermill report of the ssg study: the table and claim checks, learning "
        "curves, the witness-rate × heterogeneity sweep, the tuning curves and, for the synthetic "
        "slides, the tiling QC and the attention against the ground truth.",
    },
    report_params={
        "datasets": SSG_TABLE,
        "methods": SSG["methods"],
        "wsi_dir": SSG_REPORT_WSI.get("dir", ""),
        "wsi_truth_dir": SSG_REPORT_WSI.get("raw", ""),
    },
    report_inputs={
        k: SSG_REPORT_WSI[k] for k in ("tiles", "manifest") if SSG_REPORT_WSI
    },
    provenance_values={"ssg": SSG, "wsi": section("wsi")},
)
