"""The study's workflow jobs: align a tiny LLaVA, then run one method and seed through the stream.

`align_model` (one job, smoke and ci scales) builds the seeded tiny LLaVA and its processor
(word-level tokenizer from the stream's words, pixel values in [-1, 1]), runs the alignment
pre-training on the stream's `align` records and saves model and processor with
`save_pretrained`: the study's stand-in for a pretrained checkpoint, which every seed starts
from as every seed starts from LLaVA-1.5 at paper scale (seeds vary the batch order, the gates
and LoRA adapters, not the checkpoint). `run_method` (one job per method and seed) loads a model
folder with `from_pretrained` — that aligned folder, or at paper scale the `checkpoint` folder
(e.g. llava-1.5-7b-hf saved locally; no alignment job runs) — with the folder's own processor,
wraps it in `MLLMAdapter` (with `lora` adapters on the language model when its rank is > 0),
runs the stream and writes `<runs>/<method>/seed<k>/metrics.json`: the accuracy matrices (all
items, visually necessary, text-answerable; ranked among the task's answers, or at paper scale
each task's declared metric on generated answers, named in `task_metrics`; plus greedy exact
match), the scores of `metrics`, routing per task, the final model's necessity on held-out items
(does it separate the generator's labels?), the projector swap analysis and training losses
(wall time goes to the job's log: metrics.json must be byte-identical across runs). `runtime`
says where it runs: device, dtype, and whether tower features are cached.

Methods (`spec.METHODS`): `seqft`, `freeze_visual`, `random_gate` (with the calibration path, at
the routing rate VNG-CT had on each task of the same seed: its job reads that run), `ewc`,
`vngct_nocal`, `vngct`. Seeds: the tiny model's weights from derive_seed(align.seed, study,
"model") and its alignment batches from (align.seed, study, "align"); per evaluation seed, LoRA
adapters from (seed, study, "lora"), the stream's batch order and the random gate from (…,
"stream"); every method of a seed sees the same model and batch order.

Tuning: a run applies the values its method's tuning record selected (`tune.tune_method`, the
`vngct_tune` jobs, on the tuning seeds and held-out training items; `tune.applied_training`)
and keeps them in metrics.json (`tuned`); there is no run without a record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoProcessor, LlavaForConditionalGeneration

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.io import read_json, write_json
from reprolab.models.lora import LoRA
from reprolab.models.tiny_vlm import (
    build_tiny_llava,
    build_tokenizer,
    save_tiny_vlm,
    tokens_per_image,
)
from reprolab.preprocess.instr.stream import load_stream
from reprolab.studies.vngct import metrics
from reprolab.studies.vngct.adapter import MLLMAdapter
from reprolab.studies.vngct.align import align
from reprolab.studies.vngct.continual import (
    StreamResult,
    Training,
    held_out_necessity,
    run_stream,
    swap_accuracy,
)
from reprolab.studies.vngct.data import StreamData, load_stream_data, stream_vocabulary
from reprolab.studies.vngct.spec import MATCHED, METHODS, STUDY
from reprolab.studies.vngct.tune import applied_training
from reprolab.studies.vngct.vision import TowerFeatures

TINY_PIXEL_MEAN_STD = (0.5, 0.5)
"""The tiny model's pixel normalisation: values in [-1, 1], what its alignment was tuned on."""


def align_model(
    stream_yaml: str | Path, params: dict[str, Any], threads: int, out_dir: str | Path
) -> dict[str, Any]:
    """Build, align and save the study's tiny LLaVA into `out_dir`; the alignment summary."""
    seed = int(params["align"]["seed"])
    seed_everything(derive_seed(seed, STUDY, "align"), threads)
    stream = load_stream(stream_yaml)
    if not stream.align:
        raise ValueError(f"{stream_yaml}: the stream has no `align` records to pre-train on")
    spec = params["model"]
    model, processor = build_tiny_llava(
        build_tokenizer(stream_vocabulary(stream)),
        derive_seed(seed, STUDY, "model"),
        image_size=spec["image_size"],
        patch_size=spec["patch_size"],
        hidden=spec["hidden"],
        layers=spec["layers"],
        heads=spec["heads"],
        pixel_mean_std=TINY_PIXEL_MEAN_STD,
    )
    data = load_stream_data(
        stream, processor, tokens_per_image(model.config), params["prompt_template"]
    )
    schedule = params["align"]
    losses = align(
        model,
        data.align,
        data.images.pixels(),
        steps=int(schedule["steps"]),
        lr=float(schedule["lr"]),
        warmup_steps=int(schedule["warmup_steps"]),
        batch_size=int(schedule["batch_size"]),
        seed=derive_seed(seed, STUDY, "align"),
        show_progress=True,
    )
    data.images.close()
    save_tiny_vlm(model, processor, out_dir)
    window = min(50, len(losses))
    summary = {
        "steps": len(losses),
        "loss_first": float(np.mean(losses[:window])),
        "loss_last": float(np.mean(losses[-window:])),
    }
    write_json(Path(out_dir) / "align_summary.json", summary)
    return summary


def load_model(model_dir: str | Path, params: dict[str, Any], seed: int) -> tuple[MLLMAdapter, Any]:
    """The adapter around the LLaVA of `model_dir` (on `runtime.device`, ``auto`` = CUDA when
    present, in `runtime.dtype`, with the seed's LoRA adapters when `lora.rank` > 0) and the
    folder's processor; both from the folder only, never the hub."""
    runtime = params["runtime"]
    processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
    model = LlavaForConditionalGeneration.from_pretrained(
        model_dir, dtype=getattr(torch, runtime["dtype"]), local_files_only=True
    )
    adapter = MLLMAdapter(
        model.to(resolve_device(runtime["device"])).eval(),
        int(params["model"]["calibration_width"]),
        LoRA(**params["lora"]),
        derive_seed(seed, STUDY, "lora"),
    )
    return adapter, processor


def task_masks(data: StreamData) -> dict[str, list[np.ndarray]]:
    """Per task, the test items of each slice: all, visually necessary, text-answerable."""
    visual = [task.test.visual_needed.numpy() for task in data.tasks]
    return {
        "all": [np.ones_like(v) for v in visual],
        "visual": visual,
        "text": [~v for v in visual],
    }


def scores(result: StreamResult, data: StreamData) -> dict[str, Any]:
    """Accuracy matrices and the continual-learning scores of one run."""
    masks = task_masks(data)
    ranked = {name: metrics.slice_matrix(result.correct, m) for name, m in masks.items()}
    exact = metrics.slice_matrix(result.exact, masks["all"])
    return {
        "final_accuracy": metrics.final_accuracy(ranked["all"]),
        "average_accuracy": metrics.average_accuracy(ranked["all"]),
        "backward_transfer": metrics.backward_transfer(ranked["all"]),
        "visual_forgetting": metrics.forgetting(ranked["visual"]),
        "text_forgetting": metrics.forgetting(ranked["text"]),
        "final_exact_match": metrics.final_accuracy(exact),
        "accuracy": {name: matrix.tolist() for name, matrix in ranked.items()},
        "exact_match": exact.tolist(),
    }


def run_method(
    method_name: str,
    stream_yaml: str | Path,
    model_dir: str | Path,
    seed: int,
    params: dict[str, Any],
    threads: int,
    out_dir: str | Path,
    matched_metrics: str | Path | None = None,
    *,
    tuning: Mapping[str, Any],
) -> dict[str, Any]:
    """Run one method through the stream for one seed and write metrics.json; `tuning` is the
    method's tuning record (`vngct_tune`), whose selected values the run applies."""
    method = METHODS[method_name]
    tuned = applied_training(params["training"], tuning, method_name)
    stream_seed = derive_seed(seed, STUDY, "stream")
    seed_everything(stream_seed, threads)
    rates = None
    if method_name in MATCHED:
        if matched_metrics is None:
            raise ValueError(f"{method_name} needs the metrics of {MATCHED[method_name]}'s run")
        rates = [task["rate"] for task in read_json(matched_metrics)["routing"]]
    adapter, processor = load_model(model_dir, params, seed)
    data = load_stream_data(
        load_stream(stream_yaml),
        processor,
        tokens_per_image(adapter.model.config),
        params["prompt_template"],
        params.get("scoring"),
    )
    epochs = [int(params["epochs"][task.name]) for task in data.tasks]
    device = adapter.model.device
    tasks = [replace(t, train=t.train.to(device), test=t.test.to(device)) for t in data.tasks]
    training = Training(**tuned)
    features = TowerFeatures(
        adapter,
        data.images,
        bool(params["runtime"]["cache_features"]),
        training.eval_batch_size,
        show_progress=True,
    )
    result = run_stream(
        adapter, features, tasks, epochs, method, training, stream_seed, rates, True
    )
    swaps = swap_accuracy(
        adapter, features, tasks, result, method.calibration, training.eval_batch_size
    )
    held_out = held_out_necessity(
        adapter, features, tasks, method.calibration, training.eval_batch_size
    )
    data.images.close()
    measured = scores(result, data)
    visual_after = np.diag(np.asarray(measured["accuracy"]["visual"], dtype=float))[:-1]
    final = measured["final_accuracy"]
    print(f"{method_name} seed {seed}: {result.wall_s:.1f} s, final accuracy {final:.3f}")
    out = {
        "study": STUDY,
        "method": method_name,
        "seed": seed,
        "tasks": result.tasks,
        **measured,
        "routing": result.routing,
        "held_out_necessity": held_out,
        "swap": {"after_task": visual_after.tolist(), **swaps},
        "train_loss": result.train_loss,
        "epochs": epochs,
        "tuned": dict(tuning["selected"]),
    }
    declared = {t.name: t.scorer.metric for t in data.tasks if t.scorer is not None}
    if declared:  # paper scale: which metric each task's scores are
        out["task_metrics"] = declared
    write_json(Path(out_dir) / "metrics.json", out)
    return out
