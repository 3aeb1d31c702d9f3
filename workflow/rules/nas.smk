# nas: Norm-Anchor Scaling for sequential locate-and-edit (paper 15). One job draws the fact
# world and trains the GPT-2 every run edits (`nas_lm`; at paper scale a released edit file is
# edited on a local causal LM instead, and the job does not run); one tuning job picks MEMIT's
# covariance weight and ridge on the tuning seeds (`snakemake nas_tune`); then one job per seed
# edits the seed's stream with every method. The shared tail (tail.smk) writes the table,
# claims, provenance and report.
from reprolab.studies.nas.workflow_io import check_params as nas_check_params

NAS = section("nas")
nas_check_params(NAS)
NAS_ON_WORLD = NAS["stream"]["source"] == "world"
NAS_LM = "data/nas/lm/model"
NAS_LM_RECORD = "data/nas/lm/record.json"
NAS_WORLD = "data/nas/lm/world.json"
if NAS_ON_WORLD:
    NAS_INPUTS = {"model": NAS_LM, "world": NAS_WORLD}
else:
    NAS_INPUTS = {"paper_data": paper_inputs("nas")}
NAS_TUNING = "data/nas/tuning/editing.json"
NAS_RUNS = expand("results/nas/runs/seed{seed}/metrics.json", seed=SEEDS)
# Minutes of one run job (smoke and ci, paper): under 2 at smoke scale for every method; at
# paper scale 2000 edits of GPT-2 XL per method.
NAS_RUN_MINUTES = (10, 1440)


rule nas_lm:
    output:
        model=directory(NAS_LM),
        record=NAS_LM_RECORD,
        world=NAS_WORLD,
    log:
        "logs/nas/lm.log",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(2000, 8000), runtime=(15, 120)),
    params:
        study={key: NAS[key] for key in ("world", "lm")},
    script:
        "../scripts/nas_lm.py"


rule nas_tune_editing:
    input:
        **NAS_INPUTS,
    output:
        tuned=NAS_TUNING,
    log:
        "logs/nas/tune.log",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 96000), runtime=(15, 1440), gpus=1),
    params:
        study=NAS,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/nas_tune.py"


rule nas_run:
    input:
        **NAS_INPUTS,
        tuned=NAS_TUNING,
    output:
        metrics="results/nas/runs/seed{seed}/metrics.json",
    log:
        "logs/nas/run/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(mem_mb=(4000, 96000), runtime=NAS_RUN_MINUTES, gpus=1),
    params:
        study=NAS,
    script:
        "../scripts/nas_run.py"


register_study(
    "nas",
    runs=NAS_RUNS,
    tuning=[NAS_TUNING],
    captions={
        "table": "nas: sequential editing of the fact LM by MEMIT and ROME with and without "
        "Norm-Anchor Scaling, a tighter clamp and the random-direction control: single-edit "
        "and end-of-stream efficacy, generalisation and specificity, the horizon (edits until "
        "efficacy < 50 %), the long-run score, the growth of the target layer's weight norm "
        "and the generic-loss ratio; mean ± std over edit-stream seeds.",
        "curves": "nas curves (long format ``x,series,y``): along edits (x), each method's "
        "target-layer ‖W‖, mean ‖v*‖ and ‖δ‖ per batch and efficacy, specificity and "
        "composite per checkpoint (``<method>/<measure>``), means over seeds.",
        "report": "The papermill report of the nas study: the fact LM, the weight and value "
        "norms along the stream, the scores along the stream, the table and the claim checks, "
        "NAS's overhead and the tuning grid.",
    },
    report_params={
        "methods": list(NAS["methods"]),
        "plain": NAS["claims"]["plain"],
        "lm_record": NAS_LM_RECORD if NAS_ON_WORLD else "",
    },
    report_inputs={"lm_record": NAS_LM_RECORD} if NAS_ON_WORLD else {},
    provenance_values={"nas": NAS},
)
