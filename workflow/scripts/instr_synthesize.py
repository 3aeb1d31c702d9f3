"""Rule glue: write a synthetic instruction stream (SynthCIT or VisArith) in the LLaVA layout."""

from reprolab.core.progress import job_log
from reprolab.preprocess.instr.synthetic import build_synthetic_stream

with job_log(snakemake.log[0]):
    spec = dict(snakemake.params.spec)
    print(f"wrote {build_synthetic_stream(spec, snakemake.output.stream, show_progress=True)}")
