"""Rule glue: train every method of one (dataset, seed) job of the ssg study."""

from pathlib import Path

from reprolab.core.progress import job_log
from reprolab.studies.ssg.jobs import load_dataset, train_dataset

with job_log(snakemake.log[0]):
    p = snakemake.params
    seed = int(snakemake.wildcards.seed)
    bags = load_dataset(dict(p.spec), seed, dict(p.wsi))
    params = {"model": dict(p.model), "train": dict(p.train)}
    dataset = snakemake.wildcards.dataset
    runs_dir = Path(snakemake.output[0]).parents[3]  # <runs>/<dataset>/<method>/seed<k>/file
    train_dataset(bags, dataset, list(p.methods), params, seed, snakemake.threads, runs_dir)
