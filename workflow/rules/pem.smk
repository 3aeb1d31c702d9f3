# pem: Predictive Entropy Maximization for blind source separation (paper 9). Per method one
# tuning job (its grid on the tuning seeds; `snakemake pem_tune` runs them all), per (noise
# level, seed) one job that runs every method on every source setting with the selected
# values; the shared tail (tail.smk) writes the table, claims, provenance and report.
from reprolab.studies.pem.workflow_io import TUNE_DEPENDS as PEM_TUNE_DEPENDS
from reprolab.studies.pem.workflow_io import check_params as pem_check_params
from reprolab.studies.pem.workflow_io import snr_key as pem_snr_key

PEM = section("pem")
pem_check_params(PEM)
PEM_TUNING = expand("data/pem/tuning/{method}.json", method=PEM["methods"])
PEM_NOISE = {pem_snr_key(db): float(db) for db in PEM["noise_db"]}
PEM_RUNS = expand(
    "results/pem/runs/{noise}/seed{seed}/metrics.json", noise=PEM_NOISE, seed=SEEDS
)
# Minutes per job (smoke and ci, paper): seconds at smoke scale; at paper scale (500k samples,
# CorInfoMax with 500 inner iterations) a job runs for hours on one core.
PEM_RUNTIME = (30, 1440)
# A tuning job trains one method 9 times per tuning seed on every source setting: about three
# times the method-runs of a run job (every method once per source setting).
PEM_TUNE_RUNTIME = tuple(3 * minutes for minutes in PEM_RUNTIME)


rule pem_tune_method:
    input:
        # the tuning records a method's tuning applies first (PEM-batch uses PEM's beta)
        upstream=lambda wc: expand(
            "data/pem/tuning/{method}.json", method=PEM_TUNE_DEPENDS.get(wc.method, ())
        ),
    output:
        tuned="data/pem/tuning/{method}.json",
    log:
        "logs/pem/tune/{method}.log",
    wildcard_constraints:
        method=wildcard_choices(PEM["methods"]),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 8000), runtime=PEM_TUNE_RUNTIME),
    params:
        study=PEM,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/pem_tune.py"


rule pem_run:
    input:
        tuning=PEM_TUNING,
    output:
        metrics="results/pem/runs/{noise}/seed{seed}/metrics.json",
    log:
        "logs/pem/run/{noise}_seed{seed}.log",
    wildcard_constraints:
        noise=wildcard_choices(PEM_NOISE),
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 8000), runtime=PEM_RUNTIME),
    params:
        study=PEM,
        snr_db=lambda wc: PEM_NOISE[wc.noise],
    script:
        "../scripts/pem_run.py"


register_study(
    "pem",
    runs=PEM_RUNS,
    tuning=PEM_TUNING,
    captions={
        "table": "PEM (online, local rules) against PEM-batch, batch det-max, CorInfoMax, NSM "
        "and FastICA: SINR (dB) per source setting and sensor SNR, mean ± std over seeds.",
        "curves": "pem learning curves (long format ``x,series,y``, the input of ``dvc plots``): "
        "online PEM's SINR (dB) after every epoch against the number of training samples seen, "
        "one series per ``<source>/snr<dB>/pem`` condition, mean over seeds; the last point is "
        "PEM's cell in the table.",
        "report": "The papermill report of the pem study: SINR per source setting and noise "
        "level, online PEM's learning curves and the surrogate-error bound, the table and the "
        "claim checks.",
    },
    report_params={
        "methods": PEM["methods"],
        "sources": PEM["sources"],
        "noise_db": [float(db) for db in PEM["noise_db"]],
    },
)
