# nicer: slide condensation as distribution matching (paper 17). The slides come through the
# wsi family (data/wsi/<cohort>/features). Per row one tuning job (its grid on the tuning
# seeds, held-out training slides; `snakemake nicer_tune` runs them all); per seed one job
# that condenses every slide with every row at every budget and trains the classifier on each;
# the shared tail (tail.smk) writes the table, claims, provenance and report.
from reprolab.core.tuning import grid_points
from reprolab.studies.nicer.workflow_io import check_params as nicer_check_params
from reprolab.studies.nicer.workflow_io import cohort_paths as nicer_cohort_paths

NICER = section("nicer")
nicer_check_params(NICER)
NICER_ROOTS = ("data/wsi", "data/raw/wsi")
NICER_COHORT = nicer_cohort_paths(NICER["dataset"], *NICER_ROOTS)
NICER_TUNING = expand("data/nicer/tuning/{row}.json", row=NICER["rows"])
NICER_RUNS = expand("results/nicer/runs/seed{seed}/metrics.json", seed=SEEDS)
NICER_CONDENSED = expand("results/nicer/runs/seed{seed}/condensed.h5", seed=SEEDS)
# Minutes per trained row (smoke and ci, paper): seconds on one core at smoke scale; at paper
# scale condensing a cohort and training an ABMIL take about an hour on a GPU.
NICER_FIT_MINUTES = (1, 60)
NICER_FITS = 1 + sum(
    len(NICER["budgets"]) if row not in NICER["ablations"] else 1
    for row in NICER["rows"]
    if row != "full"
)
NICER_TUNE_FITS = len(TUNING_SEEDS) * max(
    len(grid_points(grid)) for grid in NICER["tune"]["grid"].values()
)


rule nicer_tune_row:
    input:
        features=NICER_COHORT["features"],
        labels=NICER_COHORT["labels"],
        paper_data=paper_inputs("nicer"),
    output:
        tuned="data/nicer/tuning/{row}.json",
    log:
        "logs/nicer/tune/{row}.log",
    wildcard_constraints:
        row=wildcard_choices(NICER["rows"]),
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 64000),
            runtime=tuple(NICER_TUNE_FITS * m for m in NICER_FIT_MINUTES),
            gpus=1,
        ),
    params:
        study=NICER,
        seeds=TUNING_SEEDS,
    script:
        "../scripts/nicer_tune.py"


rule nicer_run:
    input:
        features=NICER_COHORT["features"],
        labels=NICER_COHORT["labels"],
        tuning=NICER_TUNING,
        paper_data=paper_inputs("nicer"),
    output:
        metrics="results/nicer/runs/seed{seed}/metrics.json",
        condensed="results/nicer/runs/seed{seed}/condensed.h5",
    log:
        "logs/nicer/run/seed{seed}.log",
    wildcard_constraints:
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: THREADS
    resources:
        **job_resources(
            mem_mb=(4000, 64000),
            runtime=tuple(NICER_FITS * m for m in NICER_FIT_MINUTES),
            gpus=1,
        ),
    params:
        study=NICER,
    script:
        "../scripts/nicer_run.py"


register_study(
    "nicer",
    runs=NICER_RUNS + NICER_CONDENSED,
    tuning=NICER_TUNING,
    captions={
        "table": "NICER against fixed-budget condensers (random tiles, k-means, a GMM "
        "prototype learner, kernel herding), two ablations and full bags: balanced accuracy, "
        "AUC, prototypes per slide, MMD² to the slide's tiles and costs, at the table's "
        "average budget, mean ± std over seeds.",
        "curves": "nicer curves (long format ``x,series,y``): balanced accuracy against the "
        "average budget per slide (x), one series per condenser (``<row>_bacc``) and the "
        "full bags (``full_bacc``, flat); means over seeds.",
        "report": "The papermill report of the nicer study: the table and claim checks, "
        "budget curves, prototypes per slide against heterogeneity, and a slide's prototypes "
        "drawn on its thumbnail.",
    },
    report_params={
        "rows": NICER["rows"],
        "slides_dir": NICER_COHORT.get("slides", ""),
        "features_dir": NICER_COHORT["features"],
    },
    report_inputs=(
        {"slides": NICER_COHORT["slides"]} if "slides" in NICER_COHORT else {}
    ),
    provenance_values={"nicer": NICER, "wsi": section("wsi")},
)
