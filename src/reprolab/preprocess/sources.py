"""Where a preprocessing family's inputs are, for the workflow's rules.

An entry of a family's params (a `wsi.cohorts` cohort, a `video.datasets` dataset) either has a
`synthetic:` spec, and its files are generated under `data/raw/<family>/<entry>/<kind>` as an
output of the workflow, or names a folder of real files under the key `<kind>` (`slides:`,
`videos:`), which the workflow reads as it is: it is not a declared input, so a dry run never
needs it and DVC, not Snakemake, tracks its content.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def source_dir(entries: Mapping[str, Any], entry: str, kind: str, family: str) -> str:
    """The folder of an entry's `kind` files: generated under data/raw/<family>, or named."""
    return entries[entry].get(kind, f"data/raw/{family}/{entry}/{kind}")


def generated_source(
    entries: Mapping[str, Any], entry: str, kind: str, family: str
) -> dict[str, str]:
    """`{kind: folder}` when the workflow generates the entry's files, else `{}` (an input
    function's value for `unpack`)."""
    if "synthetic" in entries[entry]:
        return {kind: source_dir(entries, entry, kind, family)}
    return {}
