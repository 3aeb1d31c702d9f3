"""Rule glue: choose the technique classifier's regularisation on the labelled corpus and the
tuning seeds."""

from reprolab.core.progress import job_log
from reprolab.studies.proofrank.jobs import labelled_corpus
from reprolab.studies.proofrank.tune import tune_classifier

with job_log(snakemake.log[0]):
    tune_classifier(
        dict(snakemake.params.study),
        labelled_corpus(),
        list(snakemake.params.seeds),
        snakemake.output.tuned,
    )
