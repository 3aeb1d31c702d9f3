"""Rule glue: write a synthetic instruction stream (SynthCIT) in the LLaVA layout."""

from reprolab.core.progress import job_log
from reprolab.preprocess.instr.synthcit import SynthCITSpec, build_synthcit

with job_log(snakemake.log[0]):
    spec = SynthCITSpec.from_params(dict(snakemake.params.spec))
    print(f"wrote {build_synthcit(spec, snakemake.output.stream, show_progress=True)}")
