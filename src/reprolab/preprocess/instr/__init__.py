"""Instruction streams: continual-instruction-tuning benchmarks in the LLaVA conversation layout.

`records` defines a record (id, images, human/gpt turns, task, metric, `visual_needed`) and
lists what is wrong with one; `images` resolves, checks and loads image references
(`h5:FILE#/DATASET/INDEX` or png/jpg paths); `check` reads a JSONL file or a JSON array (as
CoIN ships it) and reports every defect with its line (`load_records` refuses a bad file);
`stream` reads and writes `stream.yaml`, the ordered tasks of a stream, and loads them all;
`synthcit` generates the synthetic continual-instruction stream and `visarith` a read-then-add
stream whose answers chain perception and arithmetic steps (for RL credit assignment);
`synthetic` picks one of them by name. `reprolab streams build|check` runs the SynthCIT
generator and the checker outside the workflow (`streams_command`).
"""
