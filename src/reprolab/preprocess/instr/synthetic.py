"""Synthetic instruction streams by generator name, so a workflow rule can build either one.

A spec is the chosen generator's own params plus an optional key `generator`: `synthcit`
(the default, so a SynthCIT spec without the key reads as before) or `visarith`. `GENERATORS`
maps each name to its spec reader, builder and vocabulary; `read_synthetic` picks the
generator and reads its spec from the other keys, `build_synthetic_stream` builds the stream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprolab.core.params import ParamsError
from reprolab.preprocess.instr import synthcit, visarith

DEFAULT_GENERATOR = "synthcit"


@dataclass(frozen=True)
class Generator:
    """One generator: reads its spec from params, writes its stream (returning the path of
    `stream.yaml`), lists the words of a spec's records (for the tokenizer)."""

    read_spec: Callable[[Mapping[str, Any]], Any]
    build: Callable[[Any, str | Path, bool], Path]
    vocabulary: Callable[[Any], list[str]]


GENERATORS: dict[str, Generator] = {
    "synthcit": Generator(
        synthcit.SynthCITSpec.from_params, synthcit.build_synthcit, synthcit.vocabulary
    ),
    "visarith": Generator(
        visarith.VisArithSpec.from_params, visarith.build_visarith, visarith.vocabulary
    ),
}


def read_synthetic(params: Mapping[str, Any]) -> tuple[Generator, Any]:
    """The generator `params` names (key `generator`, default `synthcit`) and its spec read
    from the other keys; ParamsError naming the key for a bad generator or spec."""
    if not isinstance(params, Mapping):
        raise ParamsError("synthetic stream spec: key '(top)': not a mapping")
    name = params.get("generator", DEFAULT_GENERATOR)
    if not isinstance(name, str) or name not in GENERATORS:
        raise ParamsError(
            f"synthetic stream spec: key 'generator': {name!r}, "
            f"expected one of {', '.join(GENERATORS)}"
        )
    generator = GENERATORS[name]
    return generator, generator.read_spec({k: v for k, v in params.items() if k != "generator"})


def build_synthetic_stream(
    params: Mapping[str, Any], out_dir: str | Path, show_progress: bool = False
) -> Path:
    """Build the stream `params` describes (see `read_synthetic`) into `out_dir`; return the
    path of its `stream.yaml`."""
    generator, spec = read_synthetic(params)
    return generator.build(spec, out_dir, show_progress)


def check_synthetic_streams(streams: Mapping[str, Mapping[str, Any]]) -> None:
    """Read the spec of every synthetic entry of `instr.streams` (the workflow does it before
    any job starts); ParamsError naming the stream and the key of the first bad one."""
    for name, entry in streams.items():
        if "synthetic" in entry:
            try:
                read_synthetic(entry["synthetic"])
            except ParamsError as exc:
                raise ParamsError(f"instr.streams.{name}.synthetic: {exc}") from exc
