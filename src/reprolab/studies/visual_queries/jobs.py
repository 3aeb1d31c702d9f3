"""One workflow job of the study: answer the test items of one seed with one backend.

`make_items` (the items rule) splits the videos for a seed and writes items.jsonl and the
benchmark files. `run_method` (one job per method and seed) fits the backend on the training
items where it learns, answers every test item in both modes and writes
`<runs>/<method>/seed<k>/metrics.json` (accuracy per family and mode, the tuned values it
trained with, plus what the backend reports about itself) and `predictions.csv` (item, mode,
answer, predicted).

The methods that train (`workflow_io.LEARNS`) take their learning rate from a tuning record
(`visual_queries_tune_method`, `tune.py`), never from params.yaml: `tuned_params` sets the
record's selected values in the method's params group before it trains.

Methods: `oracle`, `blind` (option-only: `blind_text` in text mode, `blind_visual` in visual
mode), `blind_set` (the option closest to the other three), `pixel_nn`, `caption_reason`,
`tinyvlm` (balanced modes), `tinyvlm_textheavy` (90 % text batches) and `hf_vlm` (a
`transformers` vision-language model from a local folder, paper scale; tested on a tiny
random LLaVA). Every learned backend is seeded from
derive_seed(seed, study, method).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import write_csv, write_json
from reprolab.studies.visual_queries import baselines, caption_reason, tinyvlm
from reprolab.studies.visual_queries.dataset import Corpus, build_items, split
from reprolab.studies.visual_queries.item_files import write_benchmark, write_items
from reprolab.studies.visual_queries.items import FAMILIES, MODES, Item
from reprolab.studies.visual_queries.text import build_vocabulary
from reprolab.studies.visual_queries.views import Renders, option_images, option_texts
from reprolab.studies.visual_queries.workflow_io import LEARNS, tuning_record

STUDY = "visual_queries"
METHODS = (
    "oracle",
    "blind",
    "blind_set",
    "pixel_nn",
    "caption_reason",
    "tinyvlm",
    "tinyvlm_textheavy",
    "hf_vlm",
)
VISUAL_SHARE = {"tinyvlm": "visual_share", "tinyvlm_textheavy": "textheavy_visual_share"}


def with_values(params: Mapping[str, Any], method: str, values: Mapping[str, Any]) -> dict:
    """A copy of the study's params with `values` (grid axis -> value, e.g. {"lr": 0.001})
    set in `method`'s params group (`LEARNS`)."""
    out = copy.deepcopy(dict(params))
    out[LEARNS[method]].update(values)
    return out


def tuned_params(
    params: Mapping[str, Any], method: str, selected: Mapping[str, Mapping[str, Any]]
) -> tuple[dict, dict[str, Any]]:
    """The params a run of `method` uses and the tuned values in them: a method that trains
    gets the values its tuning record selected (`selected`: core.tuning.selected of the
    records), a method that trains nothing the params as they are and no values."""
    if method not in LEARNS:
        return dict(params), {}
    record = tuning_record(method)
    if record not in selected:
        raise ValueError(f"visual_queries {method}: no tuning record {record!r} given")
    values = dict(selected[record])
    return with_values(params, method, values), values


def make_items(corpus: Corpus, seed: int, params: dict[str, Any], out_dir: str | Path) -> dict:
    """Write items.jsonl and the test benchmark for `seed`; return the item counts."""
    videos = split(corpus.names, seed, int(params["n_test"]))
    splits, skipped = {}, {}
    for name, names in videos.items():
        splits[name], skipped[name] = build_items(corpus, names, seed, params["items"])
    out_dir = Path(out_dir)
    write_benchmark(out_dir, splits["test"], seed, corpus.spec, params["render"])
    write_items(out_dir / "items.jsonl", splits)
    return {
        "items": {name: len(items) for name, items in splits.items()},
        "skipped": skipped,
        "failed_videos": list(corpus.failed),
    }


def accuracy(items: Sequence[Item], predicted: np.ndarray) -> dict[str, float]:
    """Accuracy (%) per family."""
    out = {}
    for family in FAMILIES:
        rows = [k for k, item in enumerate(items) if item.family == family]
        hits = [predicted[k] == items[k].answer_idx for k in rows]
        out[family] = 100.0 * float(np.mean(hits)) if hits else float("nan")
    return out


def fit_and_answer(
    method: str,
    corpus: Corpus,
    train: list[Item],
    test: list[Item],
    seed: int,
    params: dict[str, Any],
    show_progress: bool,
    renders: Renders | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Fit `method` on the `train` items where it learns (with the learning rate in `params`)
    and answer the `test` items: the predicted option per mode and the backend's own
    diagnostics. The run jobs answer a seed's test items, the tuning jobs validation items,
    passing the seed's `renders` so that every grid point reuses the draws of the first."""
    render = params["render"]
    images = None if renders is None else renders.option_images
    if method == "oracle":
        return {mode: baselines.oracle(test, mode) for mode in MODES}, {}
    if method == "blind":
        visual = baselines.blind_visual(train, test, corpus, seed, params, show_progress, images)
        return {"text": baselines.blind_text(train, test), "visual": visual}, {}
    if method == "blind_set":
        return {m: baselines.blind_set(test, corpus, m, seed, render) for m in MODES}, {}
    if method == "pixel_nn":
        return {m: baselines.pixel_nn(test, corpus, m, seed, render) for m in MODES}, {}
    if method == "hf_vlm":
        return _hf_answers(corpus, test, seed, params), {"model": params["hf_vlm"]["path"]}
    train_videos = sorted({item.video for item in train})
    if method == "caption_reason":
        model = caption_reason.train_captioner(
            corpus, train_videos, seed, params["captioner"], show_progress
        )
        answers = {
            m: caption_reason.caption_reason(model, test, corpus, m, seed, params, images)
            for m in MODES
        }
        test_videos = sorted({item.video for item in test})
        return answers, {"captioner": caption_reason.caption_accuracy(model, corpus, test_videos)}
    vocabulary = build_vocabulary(item.question for item in [*train, *test])
    share = float(params["tinyvlm"][VISUAL_SHARE[method]])
    model, curves, cache = tinyvlm.train_tinyvlm(
        corpus, train, train_videos, vocabulary, seed, share, params, show_progress, renders
    )
    answers = {
        m: tinyvlm.answer(
            model, test, corpus, m == "visual", vocabulary, seed, params, cache, images
        )
        for m in MODES
    }
    final = {stage: float(np.mean(values[-50:])) for stage, values in curves.items() if values}
    return answers, {"final_loss": final, "parameters": sum(p.numel() for p in model.parameters())}


def _hf_answers(
    corpus: Corpus, test: list[Item], seed: int, params: dict[str, Any]
) -> dict[str, np.ndarray]:
    """A `transformers` VLM from a local folder answers in both modes (no training)."""
    cfg = params["hf_vlm"]
    model = _hf_model(cfg["path"], cfg["device"], cfg["dtype"])
    answers = {}
    for mode in MODES:
        picks = []
        for item in test:
            if mode == "text":
                options: list = option_texts(item)
            else:
                options = list(option_images(item, seed, corpus.spec, params["render"]))
            picks.append(
                model.answer(corpus.clip(item.video)[: item.n_frames], item.question, options)
            )
        answers[mode] = np.asarray(picks)
    return answers


@functools.cache
def _hf_model(path: str, device: str, dtype: str) -> Any:
    """The local VLM, loaded once per job (the sprite items and, at paper scale, the real
    datasets' items share it)."""
    from reprolab.studies.visual_queries.hf_vlm import HFVideoQA

    return HFVideoQA.from_pretrained(path, device=device, dtype=dtype)


def run_method(
    method: str,
    corpus: Corpus,
    splits: dict[str, list[Item]],
    seed: int,
    params: dict[str, Any],
    selected: Mapping[str, Mapping[str, Any]],
    threads: int,
    out_dir: str | Path,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Fit and evaluate one backend for one seed with the values its tuning record selected
    (`selected`: core.tuning.selected of the records); write metrics.json and predictions.csv."""
    if method not in METHODS:
        raise ValueError(f"unknown visual_queries method {method!r}; known: {', '.join(METHODS)}")
    params, tuned = tuned_params(params, method, selected)
    seed_everything(derive_seed(seed, STUDY, method), threads)
    test = splits["test"]
    answers, extra = fit_and_answer(
        method, corpus, splits["train"], test, seed, params, show_progress
    )
    metrics: dict[str, Any] = {"method": method, "seed": seed, "n_test": len(test), **extra}
    if tuned:
        metrics["tuned"] = tuned
    for mode in MODES:
        for family, value in accuracy(test, answers[mode]).items():
            metrics[f"{family}_acc_{mode}"] = value
    rows = [
        {
            "item": item.id,
            "mode": mode,
            "answer": item.answer_idx,
            "predicted": int(answers[mode][k]),
        }
        for mode in MODES
        for k, item in enumerate(test)
    ]
    if params.get("real_items"):  # paper scale: the real datasets' items too (real_jobs)
        from reprolab.studies.visual_queries.real_jobs import answer_real_datasets

        cfg = params["hf_vlm"]
        real, real_rows = answer_real_datasets(
            method, seed, params, lambda: _hf_model(cfg["path"], cfg["device"], cfg["dtype"])
        )
        metrics.update(real)
        rows += real_rows
    out_dir = Path(out_dir)
    write_csv(out_dir / "predictions.csv", pd.DataFrame(rows))
    write_json(out_dir / "metrics.json", metrics)
    return metrics
