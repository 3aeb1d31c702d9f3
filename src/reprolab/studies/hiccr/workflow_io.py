"""What the hiccr rules need from the study: the params checks and the bases to tune.

workflow/rules/hiccr.smk imports this module, so it imports nothing heavy (no scipy, torch or
transformers): every snakemake start and every cluster job parses the rule files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reprolab.core.tuning import check_equal_grids
from reprolab.studies.hiccr.rows import ROWS


def tuned_bases(params: Mapping[str, Any]) -> list[str]:
    """The base algorithms of the listed methods, in table order: one tuning job each."""
    bases: dict[str, None] = {}
    for method in params["methods"]:
        bases[ROWS[method].base] = None
    return list(bases)


def check_params(params: Mapping[str, Any], streams: Mapping[str, Any]) -> None:
    """Reject what the schema (studies/hiccr.schema.yaml) cannot: the items come from exactly
    one of `stream` (an entry of `instr.streams`) and `benchmarks` (released files), every
    tuned base needs a grid and the grids one size (the same tuning budget), and the gate's
    window and the clipping ranges must be ordered. ValueError naming the key. (What each
    source needs beside it, the tiny `model` or the `checkpoint`, is the schema's.)"""
    if ("stream" in params) == ("benchmarks" in params):
        raise ValueError(
            "hiccr: name the items by exactly one of `stream` (a VisArith stream) and "
            "`benchmarks` (released files); drop the other with `null` at the scale"
        )
    if "stream" in params and params["stream"] not in streams:
        raise ValueError(
            f"hiccr.stream: {params['stream']!r} is not an instr.streams entry "
            f"(known: {', '.join(sorted(streams))})"
        )
    check_equal_grids(params["tune"]["grid"], tuned_bases(params), "hiccr.tune.grid")
    low, high = params["sft"]["gate"]["accuracy"]
    if low > high:
        raise ValueError(f"hiccr.sft.gate.accuracy: {[low, high]} is not [low, high]")
    for key in ("token_clip", "trajectory_clip"):
        low, high = params["credit"][key]
        if not low <= 1.0 <= high:
            raise ValueError(f"hiccr.credit.{key}: {[low, high]} must hold 1 (unweighted credit)")
