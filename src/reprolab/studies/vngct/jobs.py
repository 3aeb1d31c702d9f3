"""The study's workflow jobs: align a tiny LLaVA per seed, then run one method through the stream.

`align_model` (one job per seed) builds the seeded tiny LLaVA from the stream's vocabulary,
runs the alignment pre-training on the stream's `align` records and saves model and processor
with `save_pretrained` (the artifact every method of the seed starts from). `run_method` (one
job per method and seed) loads that folder with `from_pretrained` — the path a local
checkpoint would take — wraps it in `MLLMAdapter`, runs the stream and writes
`<runs>/<method>/seed<k>/metrics.json`: the accuracy matrices (all items, visually necessary,
text-answerable; ranked among the task's answers, plus greedy exact match), the scores of
`metrics`, routing per task, the final model's necessity on held-out items (does it separate
the generator's labels?), the projector swap analysis and training losses (wall time goes
to the job's log: metrics.json must be byte-identical across runs).

Methods (`METHODS`): `seqft`, `freeze_visual`, `random_gate` (with the calibration path, at
the routing rate VNG-CT had on each task of the same seed: its job reads that run), `ewc`,
`vngct_nocal`, `vngct`. Seeds: the model's weights from derive_seed(seed, study, "model"),
alignment batches from (…, "align"), the stream's batch order and the random gate from
(…, "stream"); every method of a seed sees the same aligned model and batch order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import LlavaForConditionalGeneration

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import read_json, write_json
from reprolab.models.tiny_vlm import build_tiny_llava, save_tiny_vlm
from reprolab.studies.vngct import metrics
from reprolab.studies.vngct.adapter import MLLMAdapter
from reprolab.studies.vngct.align import align
from reprolab.studies.vngct.continual import (
    Method,
    StreamResult,
    Training,
    held_out_necessity,
    run_stream,
    swap_accuracy,
)
from reprolab.studies.vngct.data import StreamData, load_stream_data

STUDY = "vngct"
METHODS = {
    "seqft": Method(),
    "freeze_visual": Method(freeze_visual=True),
    "random_gate": Method(gate="random", calibration=True),
    "ewc": Method(ewc=True),
    "vngct_nocal": Method(gate="necessity"),
    "vngct": Method(gate="necessity", calibration=True),
}
MATCHED = {"random_gate": "vngct"}
"""Methods whose routing rates come from another method's run of the same seed."""


def check_params(params: dict[str, Any], streams: dict[str, Any]) -> None:
    """Reject a bad `vngct` section before any job starts; ValueError naming the key."""
    if params["stream"] not in streams:
        raise ValueError(
            f"vngct.stream: {params['stream']!r} is not an instr.streams entry "
            f"(known: {', '.join(sorted(streams))})"
        )
    unknown = [m for m in params["methods"] if m not in METHODS]
    if unknown:
        raise ValueError(f"vngct.methods: unknown {unknown}; known: {', '.join(METHODS)}")
    for method, source in MATCHED.items():
        if method in params["methods"] and source not in params["methods"]:
            raise ValueError(f"vngct.methods: {method} matches {source}'s routing; list {source}")
    Training(**params["training"])


def matched_run(method: str, seed: int, runs_dir: str) -> dict[str, str]:
    """`{"matched": metrics.json}` of the run whose routing rates `method` copies, else `{}`."""
    if method in MATCHED:
        return {"matched": f"{runs_dir}/{MATCHED[method]}/seed{seed}/metrics.json"}
    return {}


def _stream_data(stream_yaml: str | Path, params: dict[str, Any]) -> StreamData:
    model = params["model"]
    tokens = (model["image_size"] // model["patch_size"]) ** 2
    return load_stream_data(stream_yaml, tokens)


def align_model(
    stream_yaml: str | Path, seed: int, params: dict[str, Any], threads: int, out_dir: str | Path
) -> dict[str, Any]:
    """Build, align and save the seed's tiny LLaVA into `out_dir`; the alignment summary."""
    seed_everything(derive_seed(seed, STUDY, "align"), threads)
    data = _stream_data(stream_yaml, params)
    if data.align is None:
        raise ValueError(f"{stream_yaml}: the stream has no `align` records to pre-train on")
    spec = params["model"]
    model, processor = build_tiny_llava(
        data.tokenizer,
        derive_seed(seed, STUDY, "model"),
        image_size=spec["image_size"],
        patch_size=spec["patch_size"],
        hidden=spec["hidden"],
        layers=spec["layers"],
        heads=spec["heads"],
    )
    schedule = params["align"]
    losses = align(
        model,
        data.align,
        data.pixels,
        steps=int(schedule["steps"]),
        lr=float(schedule["lr"]),
        warmup_steps=int(schedule["warmup_steps"]),
        batch_size=int(schedule["batch_size"]),
        seed=derive_seed(seed, STUDY, "align"),
        show_progress=True,
    )
    save_tiny_vlm(model, processor, out_dir)
    window = min(50, len(losses))
    summary = {
        "steps": len(losses),
        "loss_first": float(np.mean(losses[:window])),
        "loss_last": float(np.mean(losses[-window:])),
    }
    write_json(Path(out_dir) / "align_summary.json", summary)
    return summary


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
) -> dict[str, Any]:
    """Run one method through the stream for one seed and write metrics.json."""
    method = METHODS[method_name]
    stream_seed = derive_seed(seed, STUDY, "stream")
    seed_everything(stream_seed, threads)
    data = _stream_data(stream_yaml, params)
    epochs = [int(params["epochs"][task.name]) for task in data.tasks]
    rates = None
    if method_name in MATCHED:
        if matched_metrics is None:
            raise ValueError(f"{method_name} needs the metrics of {MATCHED[method_name]}'s run")
        rates = [task["rate"] for task in read_json(matched_metrics)["routing"]]
    model = LlavaForConditionalGeneration.from_pretrained(model_dir).eval()
    adapter = MLLMAdapter(model, int(params["model"]["calibration_width"]))
    training = Training(**params["training"])
    with torch.no_grad():
        features = adapter.tower_features(data.pixels)
    result = run_stream(
        adapter, features, data.tasks, epochs, method, training, stream_seed, rates, True
    )
    swaps = swap_accuracy(
        adapter, features, data.tasks, result, method.calibration, training.eval_batch_size
    )
    held_out = held_out_necessity(
        adapter, features, data.tasks, method.calibration, training.eval_batch_size
    )
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
    }
    write_json(Path(out_dir) / "metrics.json", out)
    return out
