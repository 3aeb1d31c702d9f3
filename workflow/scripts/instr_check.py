"""Rule glue: check every record file of a stream; the counts go to check.json, defects fail."""

from pathlib import Path

from reprolab.core.io import write_json
from reprolab.core.progress import job_log
from reprolab.preprocess.instr.stream import load_stream

with job_log(snakemake.log[0]):
    stream = load_stream(Path(snakemake.params.stream) / "stream.yaml")
    write_json(
        snakemake.output.report,
        {
            "stream": stream.name,
            "align_records": len(stream.align or []),
            "tasks": {t.name: {"train": len(t.train), "test": len(t.test)} for t in stream.tasks},
            "metrics": {t.name: t.metric for t in stream.tasks},
        },
    )
