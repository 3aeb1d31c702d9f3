"""What the overcorrection rules need from the study: the names of its tuning records and the
checks of its params that the schema cannot express, run before any job starts.

workflow/rules/overcorrection.smk imports this module, so it imports nothing heavy (no torch or
transformers): every snakemake start and every cluster job parses the rule files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TUNED_SELECTORS = ("mmr", "theory")
"""The selectors with a tuning record per reader and channel (jobs.tune_job)."""
PRETRAINED = "pretrained"
"""The reader kind of a local language model folder reading a released set (text_path)."""


def pretrained_readers(params: Mapping[str, Any]) -> list[str]:
    """The readers that are language model folders (no training job), in table order."""
    return [name for name, spec in params["readers"].items() if spec["kind"] == PRETRAINED]


def trained_readers(params: Mapping[str, Any]) -> list[str]:
    """The readers trained per seed by overcorrection_train, in table order."""
    return [name for name, spec in params["readers"].items() if spec["kind"] != PRETRAINED]


def tuning_method(reader: str, channel: str, selector: str) -> str:
    """The tuning record's method name of a tuned selector in one reader and channel."""
    return f"{reader}_{channel}_{selector}"


def tuned_methods(params: Mapping[str, Any], reader: str | None = None) -> list[str]:
    """The tuning records' method names of every reader (or of `reader`, which may be a
    Snakemake wildcard pattern)."""
    readers = list(params["readers"]) if reader is None else [reader]
    return [
        tuning_method(name, channel, selector)
        for name in readers
        for channel in params["channels"]
        for selector in TUNED_SELECTORS
    ]


def check_params(params: Mapping[str, Any]) -> None:
    """ValueError naming the key: the claims' selectors are among the selectors; the tuned
    selectors are selected; the ks fit in a pool; a softmax reader's width splits into its
    heads; a pretrained reader's set is in `sets`, and `text` is given."""
    selectors, claims = list(params["selectors"]), params["claims"]
    named = [claims["growth_selector"], claims["theory"], *claims["baselines"], *TUNED_SELECTORS]
    for name in named:
        if name not in selectors:
            raise ValueError(
                f"overcorrection.claims: selector {name!r} is not in overcorrection.selectors"
            )
    if max(params["ks"]) > params["pools"]["size"]:
        raise ValueError(
            f"overcorrection.ks: {max(params['ks'])} items do not fit a pool of "
            f"{params['pools']['size']}"
        )
    for name in pretrained_readers(params):
        if "text" not in params:
            raise ValueError(f"overcorrection.readers.{name}: a pretrained reader needs `text`")
        if params["readers"][name]["set"] not in params.get("sets", {}):
            raise ValueError(
                f"overcorrection.readers.{name}: set {params['readers'][name]['set']!r} is not "
                "in overcorrection.sets"
            )
    for name, spec in params["readers"].items():
        if spec["kind"] == "softmax" and spec["hidden"] % spec["heads"]:
            raise ValueError(
                f"overcorrection.readers.{name}: hidden {spec['hidden']} does not split into "
                f"{spec['heads']} heads"
            )
