"""Rule glue: train every method of one (dataset, seed) job of the ssg study with its tuned
values."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.core.tuning import selected
from reprolab.studies.ssg.jobs import load_dataset, train_dataset
from reprolab.studies.ssg.tune import tuned_params

with job_log(snakemake.log[0]):
    p = snakemake.params
    seed = int(snakemake.wildcards.seed)
    bags = load_dataset(dict(p.spec), seed, dict(p.wsi))
    methods = list(p.methods)
    settings = tuned_params(p.model, p.train, selected(snakemake.input.tuning), methods)
    dataset = snakemake.wildcards.dataset
    runs_dir = Path(snakemake.output[0]).parents[3]  # <runs>/<dataset>/<method>/seed<k>/file
    train_dataset(bags, dataset, methods, settings, seed, snakemake.threads, runs_dir)
