"""What the nas rules need from the study: the checks of its params that the schema cannot
express, run before any job starts.

workflow/rules/nas.smk imports this module, so it imports nothing heavy (no torch or
transformers): every snakemake start and every cluster job parses the rule files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ROLES = {
    "plain": ("memit", False),
    "nas": ("memit", True),
    "tight": ("memit", False),
    "rome": ("rome", False),
    "rome_nas": ("rome", True),
}
"""Each method the claims name: the editor it must use and whether it anchors (NAS)."""


def check_params(params: Mapping[str, Any]) -> None:
    """ValueError naming the key: the claims' methods exist with the editor and anchor their
    role needs (the tight one with a clamp); the edit layers rise and lie below the fact LM's
    last block; a world batch fits its editable subjects; a file stream names its file, model,
    tuning share and texts."""
    methods = params["methods"]
    for role, (editor, anchored) in ROLES.items():
        name = params["claims"][role]
        spec = methods.get(name)
        if spec is None or spec["editor"] != editor or bool(spec.get("anchor")) != anchored:
            need = f"a {editor} method {'with' if anchored else 'without'} an anchor"
            raise ValueError(f"nas.claims.{role}: {name!r} must name {need} in nas.methods")
    if not methods[params["claims"]["tight"]].get("clamp"):
        raise ValueError("nas.claims.tight: the tight method needs its own `clamp`")
    layers = list(params["editing"]["layers"])
    if layers != sorted(set(layers)):
        raise ValueError(f"nas.editing.layers: {layers} must rise without repeats")
    stream = params["stream"]
    if stream["source"] == "world":
        if layers[-1] >= int(params["lm"]["layers"]) - 1:
            raise ValueError(
                f"nas.editing.layers: the target layer {layers[-1]} must lie below the fact "
                f"LM's last block ({int(params['lm']['layers']) - 1})"
            )
        world = params["world"]
        editable = round(world["subjects"] * (1 - world["paraphrase_subjects"]))
        if int(params["editing"]["batch_size"]) > editable:
            raise ValueError(
                f"nas.editing.batch_size: a batch needs distinct subjects, the world has "
                f"{editable} editable ones"
            )
        return
    for key, found in (("stream.file", stream.get("file")), ("model", params.get("model"))):
        if not found:
            raise ValueError(f"nas.{key}: a {stream['source']} stream needs it")
    share = stream.get("tuning_share")
    if share is None or not 0.0 < float(share) < 1.0:
        raise ValueError(
            "nas.stream.tuning_share: a file stream needs a share in (0, 1) to tune on"
        )
    if not (params.get("texts") or {}).get("file"):
        raise ValueError(f"nas.texts.file: a {stream['source']} stream needs generic texts")
