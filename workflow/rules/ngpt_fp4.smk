# ngpt_fp4: nGPT and GPT trained under emulated NVFP4 (paper 12). One corpus job (the
# standard-library docstrings, or a text folder at paper scale); per architecture one tuning
# job (its learning rate, full precision, on the tuning seeds; `snakemake ngpt_fp4_tune`); per
# architecture and seed one job that trains every recipe and one that measures the quantised
# dot products across hidden sizes; the shared tail (tail.smk) writes the table, claims,
# provenance and report. The study runs on the first `seed_count` seeds: it is compute-bound
# (docs/studies/ngpt_fp4.md).
from reprolab.studies.ngpt_fp4.workflow_io import check_params as ngpt_fp4_check_params

NGPT_FP4 = section("ngpt_fp4")
ngpt_fp4_check_params(NGPT_FP4)
NGPT_FP4_ARCHS = list(NGPT_FP4["architectures"])
NGPT_FP4_SEEDS = SEEDS[: NGPT_FP4["seed_count"]]
NGPT_FP4_TUNING = expand("data/ngpt_fp4/tuning/{arch}.json", arch=NGPT_FP4_ARCHS)
NGPT_FP4_RUNS = expand(
    "results/ngpt_fp4/runs/{arch}/seed{seed}/{kind}.json",
    arch=NGPT_FP4_ARCHS,
    seed=NGPT_FP4_SEEDS,
    kind=["metrics", "mechanism"],
)
# Minutes per run of the evaluation's length (smoke and ci, paper): about half a minute on one
# core at smoke scale; a 1.2B model through its token budget takes days on one GPU.
NGPT_FP4_RUN_MINUTES = (2, 4320)


rule ngpt_fp4_corpus:
    input:
        paper_data=paper_inputs("ngpt_fp4"),
    output:
        corpus="data/ngpt_fp4/corpus.txt",
    log:
        "logs/ngpt_fp4/corpus.log",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(1000, 32000), runtime=(5, 240)),
    params:
        corpus=NGPT_FP4["corpus"],
    script:
        "../scripts/ngpt_fp4_corpus.py"


rule ngpt_fp4_tune_arch:
    input:
        corpus="data/ngpt_fp4/corpus.txt",
    output:
        tuned="data/ngpt_fp4/tuning/{arch}.json",
    log:
        "logs/ngpt_fp4/tune/{arch}.log",
    wildcard_constraints:
        arch=wildcard_choices(NGPT_FP4_ARCHS),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(2000, 64000),
            runtime=tuple(
                len(TUNING_SEEDS) * len(NGPT_FP4["tune"]["grid"]["gpt"]["lr"]) * m
                for m in NGPT_FP4_RUN_MINUTES
            ),
            gpus=1,
        ),
    params:
        study=NGPT_FP4,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/ngpt_fp4_tune.py"


rule ngpt_fp4_run:
    input:
        corpus="data/ngpt_fp4/corpus.txt",
        tuning="data/ngpt_fp4/tuning/{arch}.json",
    output:
        metrics="results/ngpt_fp4/runs/{arch}/seed{seed}/metrics.json",
    log:
        "logs/ngpt_fp4/run/{arch}_seed{seed}.log",
    wildcard_constraints:
        arch=wildcard_choices(NGPT_FP4_ARCHS),
        seed=r"\d+",
    # the longest jobs first, so that the short mechanism jobs fill the cores at the end
    priority: 1
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(2000, 64000),
            runtime=tuple(
                2 * len(NGPT_FP4["recipes"]) * m for m in NGPT_FP4_RUN_MINUTES
            ),
            gpus=1,
        ),
    params:
        study=NGPT_FP4,
    script:
        "../scripts/ngpt_fp4_run.py"


rule ngpt_fp4_mechanism:
    input:
        corpus="data/ngpt_fp4/corpus.txt",
        tuning="data/ngpt_fp4/tuning/{arch}.json",
    output:
        mechanism="results/ngpt_fp4/runs/{arch}/seed{seed}/mechanism.json",
    log:
        "logs/ngpt_fp4/mechanism/{arch}_seed{seed}.log",
    wildcard_constraints:
        arch=wildcard_choices(NGPT_FP4_ARCHS),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(2000, 64000), runtime=(5, 720), gpus=1),
    params:
        study=NGPT_FP4,
    script:
        "../scripts/ngpt_fp4_mechanism.py"


register_study(
    "ngpt_fp4",
    runs=NGPT_FP4_RUNS,
    tuning=NGPT_FP4_TUNING,
    seeds=NGPT_FP4_SEEDS,
    captions={
        "table": "GPT and nGPT in full precision and under emulated NVFP4 (plain; + Hadamard "
        "transform and stochastic rounding; static scales with headroom): validation loss, its "
        "paired gap to full precision, loss spikes, largest gradient and sharpness, mean ± std "
        "over seeds.",
        "curves": "ngpt_fp4 curves (long format ``x,series,y``): training loss per logged "
        "window (series ``<arch>/<recipe>``, x = step) and the mechanism against the hidden "
        "size (series ``<arch>/snr_db``, ``<arch>/rho``, ``<arch>/rho_noise``, x = d); means "
        "over seeds.",
        "report": "The papermill report of the ngpt_fp4 study: loss curves, gaps, SNR and "
        "correlations against the hidden size, sharpness, the table and the claim checks.",
    },
    report_params={
        "architectures": NGPT_FP4_ARCHS,
        "recipes": list(NGPT_FP4["recipes"]),
    },
)
