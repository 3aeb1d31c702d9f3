"""What the visual_queries rules need from the study: the params checks, the tuning records
the listed methods train with, and the paths of the real datasets' items.

workflow/rules/visual_queries.smk imports this module, so it imports nothing heavy (no scipy,
torch or transformers): every snakemake start and every cluster job parses the rule files.

* `check_params`: the study's video dataset is a synthetic `video.datasets` entry.
* `check_grids`: every tuning record the listed methods train with (`tuning_records`: `blind`,
  `caption_reason`, `tinyvlm`; the text-heavy probe trains with TinyVLM's) has a grid in
  `tune.grid`, and every grid has the same number of points (the same tuning budget).
  params.yaml sets no learning rate: the schema forbids `blind_visual.lr`, `captioner.lr` and
  `tinyvlm.lr`.
* `items_path`, `summary_path`, `frames_dir`, `real_datasets`: at paper scale, the real
  datasets (`real_jobs`) and the files their items rule and the run jobs read and write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reprolab.core.tuning import check_equal_grids

LEARNS = {
    "blind": "blind_visual",
    "caption_reason": "captioner",
    "tinyvlm": "tinyvlm",
    "tinyvlm_textheavy": "tinyvlm",
}
"""The methods that train, and the params group whose settings their tuning grid sets: the
option-image CNN of `blind` (its text half, TF-IDF + logistic regression, has no learning
rate), the captioner behind `caption_reason`, and TinyVLM (both stages, one optimizer setting).
The other methods train nothing and have no tuning."""
SHARED_RECORD = {"tinyvlm_textheavy": "tinyvlm"}
"""A method that trains with another method's tuning record: the text-heavy probe takes the
values selected for balanced TinyVLM, so the two rows differ only in the share of visual
batches (the factor the probe varies), as they shared one hand-set rate before tuning."""
DATASETS = ("clevrer", "ssv2")
"""The real datasets a `real_items` entry can name."""


def tuning_record(method: str) -> str:
    """The name of the tuning record whose selected values `method` trains with."""
    if method not in LEARNS:
        raise ValueError(f"visual_queries method {method!r} trains nothing and has no tuning")
    return SHARED_RECORD.get(method, method)


def tuning_records(methods: Sequence[str]) -> list[str]:
    """The tuning records (one `visual_queries_tune_method` job each) that the listed methods
    train with, in table order, each once."""
    return list(dict.fromkeys(tuning_record(m) for m in methods if m in LEARNS))


def check_params(params: dict[str, Any], video_datasets: dict[str, Any]) -> dict[str, Any]:
    """The synthetic spec of the study's video dataset; ValueError naming the key otherwise.

    Only what the schema (studies/visual_queries.schema.yaml) cannot say is checked here:
    `dataset` must be a `video.datasets` entry with a synthetic spec. Types, ranges, known methods
    and a non-empty `hf_vlm.path` when hf_vlm is listed are the schema's (core.params).
    """
    name = params["dataset"]
    if name not in video_datasets:
        raise ValueError(
            f"visual_queries.dataset: {name!r} is not a video.datasets entry "
            f"(known: {', '.join(sorted(video_datasets))})"
        )
    if "synthetic" not in video_datasets[name]:
        raise ValueError(
            f"visual_queries.dataset: {name!r} names a folder of real videos; the items need "
            "the ground truth of a synthetic dataset"
        )
    return video_datasets[name]["synthetic"]


def check_grids(params: Mapping[str, Any]) -> None:
    """Reject tuning grids the schema cannot judge (a missing grid, grids of unequal size);
    the ValueError names the key."""
    grids = params["tune"]["grid"]
    check_equal_grids(grids, tuning_records(params["methods"]), "visual_queries.tune.grid")


def items_path(dataset: str, seed: int | str) -> str:
    """Where the items rule writes one seed's items of a real dataset."""
    return f"data/visual_queries/{dataset}/seed{seed}/items.jsonl"


def summary_path(dataset: str, seed: int | str) -> str:
    """The item counts beside them."""
    return f"data/visual_queries/{dataset}/seed{seed}/summary.json"


def frames_dir(dataset: str) -> str:
    """The video family's decoded clips of a real dataset."""
    return f"data/video/{dataset}/frames"


def real_datasets(params: Mapping[str, Any]) -> list[str]:
    """The real datasets the study's params name (none below paper scale); ValueError for one
    that has no loader."""
    names = list(params.get("real_items") or {})
    unknown = [name for name in names if name not in DATASETS]
    if unknown:
        raise ValueError(
            f"visual_queries.real_items.{unknown[0]}: no loader; expected one of {list(DATASETS)}"
        )
    return names
