# Instruction streams (preprocessing family): per stream, a synthetic stream (SynthCIT or
# VisArith, its spec checked before any job starts) is generated in the LLaVA conversation layout
# (smoke and ci scale) or a folder holding a benchmark's stream.yaml is named (paper scale:
# CoIN, MLLM-CL, UCIT); then every record file is checked. Studies read the
# stream under data/raw/instr/<stream>/stream (or the named folder) after data/instr/<stream>/check.json.
from reprolab.preprocess.instr.synthetic import check_synthetic_streams
from reprolab.preprocess.sources import generated_source, source_dir

INSTR = section("instr")
INSTR_STREAMS = list(INSTR["streams"])
check_synthetic_streams(INSTR["streams"])


rule instr_synthesize:
    output:
        stream=directory("data/raw/instr/{instr_stream}/stream"),
    log:
        "logs/instr/synthesize/{instr_stream}.log",
    wildcard_constraints:
        instr_stream=wildcard_choices(INSTR_STREAMS),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(2000, 2000), runtime=(10, 10)),
    params:
        spec=lambda wc: INSTR["streams"][wc.instr_stream]["synthetic"],
    script:
        "../scripts/instr_synthesize.py"


rule instr_check:
    input:
        unpack(
            lambda wc: generated_source(
                INSTR["streams"], wc.instr_stream, "stream", "instr"
            )
        ),
        paper_data=lambda wc: paper_inputs("instr", wc.instr_stream),
    output:
        report="data/instr/{instr_stream}/check.json",
    log:
        "logs/instr/check/{instr_stream}.log",
    wildcard_constraints:
        instr_stream=wildcard_choices(INSTR_STREAMS),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        **job_resources(mem_mb=(4000, 16000), runtime=(30, 120)),
    params:
        stream=lambda wc: source_dir(
            INSTR["streams"], wc.instr_stream, "stream", "instr"
        ),
    script:
        "../scripts/instr_check.py"


rule instr:
    input:
        expand("data/instr/{instr_stream}/check.json", instr_stream=INSTR_STREAMS),
    localrule: True
