"""The strap jobs: pre-train the backbone, and run every placement for one seed.

A run (`run_seed`) does, for each task (`fine`: classes defined by motion order; `coarse`:
classes defined by appearance, the K400-like control):

1. temporal sensitivity of every block of the frozen backbone on `sensitivity.clips`
   unlabelled training clips drawn from the seed (sensitivity.py), the same measure on a
   randomly initialised copy (the control that says whether pre-training made the curve), the
   CKA measure, and the boundaries: STRAP's segment rule on TS (b*), the κ-threshold on TS and
   the segment rule on CKA (the ablation);
2. every row of `rows` (fine) or `coarse_rows` (coarse) trained with its tuned learning rate;
   on the fine task also the b-sweep, STRAP's placement at every b in 1..L−1 with STRAP's
   learning rate, and at its ends (b = 0, b = L) the temporal-all and spatial-all rows with
   their own; its best point is the oracle row. STRAP's row is the sweep's point at b*; the
   reversed placement uses STRAP's learning rate;
3. per row: test top-1, trainable parameters (counted on the model, and the closed form of
   adapters.placement_parameters beside it) and inference FLOPs per clip.

Within a seed every row trains from the same seed (data order, head and adapter draws), so
the rows are paired by seed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.io import write_json
from reprolab.core.tuning import selected
from reprolab.studies.strap.adapters import placement, placement_parameters
from reprolab.studies.strap.backbone import blocks, load_backbone
from reprolab.studies.strap.data import ClipSet, class_count, load_task
from reprolab.studies.strap.sensitivity import (
    block_tokens,
    cka_sensitivity,
    segment_boundary,
    temporal_sensitivity,
    threshold_boundary,
)
from reprolab.studies.strap.train import accuracy, batch_of, build_model, fit, inference_flops
from reprolab.studies.strap.workflow_io import SWEEP_ENDS

LOG = logging.getLogger(__name__)
TASKS = ("fine", "coarse")
SWEEP_ROW = "strap"


def learning_rate(row: str, chosen: Mapping[str, Mapping[str, Any]]) -> float:
    """The tuned peak learning rate of `row` (the reversed placement uses STRAP's)."""
    source = SWEEP_ROW if row == "strap_reversed" else row
    if source not in chosen:
        raise ValueError(f"strap: no tuning record for {source!r} (have {sorted(chosen)})")
    return float(chosen[source]["lr"])


def settings(params: Mapping[str, Any]) -> dict[str, Any]:
    """The training settings the model and loop read, in one mapping."""
    backbone = params["backbone"]
    return {
        **params["train"],
        **params["adapters"],
        "mean": list(backbone["mean"]),
        "std": list(backbone["std"]),
    }


def sensitivity_clips(
    train: ClipSet, count: int, seed: int, config: Mapping[str, Any]
) -> torch.Tensor:
    """`count` training clips drawn from `seed`, normalised: TS's unlabelled sample."""
    rows = np.sort(np.random.default_rng(seed).permutation(len(train))[: min(count, len(train))])
    return batch_of(train, rows, config)


def random_copy(backbone: nn.Module, seed: int) -> nn.Module:
    """A randomly initialised model of the backbone's architecture (the TS control)."""
    torch.manual_seed(seed)
    device = next(backbone.parameters()).device
    return type(backbone)(backbone.config).to(device).eval()


def measure_sensitivity(
    backbone: nn.Module, train: ClipSet, params: Mapping[str, Any], seed: int
) -> dict[str, Any]:
    """TS, its random-backbone control, the CKA measure and the three boundaries."""
    config = settings(params)
    sample = sensitivity_clips(train, int(params["sensitivity"]["clips"]), seed, config)
    tokens = block_tokens(backbone, sample)
    ts = temporal_sensitivity(tokens)
    cka = cka_sensitivity(tokens)
    control = temporal_sensitivity(block_tokens(random_copy(backbone, seed), sample))
    kappa = float(params["sensitivity"]["kappa"])
    return {
        "ts": ts.tolist(),
        "cka": cka.tolist(),
        "random_ts": control.tolist(),
        "boundary": {
            "segment": segment_boundary(ts),
            "threshold": threshold_boundary(ts, kappa),
            "cka": segment_boundary(cka),
            "random": segment_boundary(control),
        },
    }


def run_placement(
    backbone: nn.Module,
    task: Mapping[str, ClipSet],
    plan: Sequence[str],
    lr: float,
    params: Mapping[str, Any],
    seed: int,
    label: str,
) -> dict[str, Any]:
    """Train `plan` on the task's train split and measure it on its test split."""
    config = settings(params)
    model = build_model(backbone, plan, class_count(task), config, seed)
    try:
        loss = fit(model, task["train"], config, lr, seed, label=label)
        top1 = 100.0 * accuracy(model, task["test"], config)
        clip = batch_of(task["test"], np.arange(1), config)
        flops = inference_flops(model, clip)
        parameters = model.trainable_parameters()
        head = sum(w.numel() for w in model.head.parameters())
    finally:
        model.remove_hooks()
    width = int(backbone.config.hidden_size)
    LOG.info("%s: top-1 %.2f, %d trainable parameters, lr %g", label, top1, parameters, lr)
    return {
        "accuracy": top1,
        "parameters": parameters,
        "adapter_parameters": parameters - head,
        "closed_form_parameters": placement_parameters(plan, width, int(config["bottleneck"])),
        "flops": flops,
        "final_loss": loss,
        "lr": lr,
        "placement": list(plan),
    }


def run_task(
    name: str,
    backbone: nn.Module,
    task: Mapping[str, ClipSet],
    rows: Sequence[str],
    chosen: Mapping[str, Mapping[str, Any]],
    params: Mapping[str, Any],
    seed: int,
    sweep: bool,
) -> dict[str, Any]:
    """One task of a seed's run: sensitivity, then the rows (and the b-sweep)."""
    layers = len(blocks(backbone))
    task_seed = derive_seed(seed, "strap", name)
    result = {"sensitivity": measure_sensitivity(backbone, task["train"], params, task_seed)}
    b_star = result["sensitivity"]["boundary"]["segment"]
    trained: dict[str, dict[str, Any]] = {}

    def train(row: str, boundary: int | None = None) -> dict[str, Any]:
        plan = placement(row, layers, boundary)
        lr = learning_rate(row, chosen)
        key = f"{plan} {lr}"
        if key not in trained:  # the same placement at the same rate is the same run
            label = f"{name} seed {seed} {row}" + ("" if boundary is None else f" b={boundary}")
            trained[key] = run_placement(backbone, task, plan, lr, params, task_seed, label)
        return {**trained[key], "boundary": boundary}

    result["rows"] = {row: train(row, b_star if row.startswith("strap") else None) for row in rows}
    if sweep:
        ends = {0: SWEEP_ENDS[0], layers: SWEEP_ENDS[1]}
        result["sweep"] = {
            str(b): train(ends[b]) if b in ends else train(SWEEP_ROW, b) for b in range(layers + 1)
        }
    return result


def run_seed(
    params: Mapping[str, Any],
    seed: int,
    backbone_dir: str | Path,
    tasks: Mapping[str, tuple[str | Path, str | Path]],
    tuning_files: Sequence[str | Path],
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Every task's sensitivity, rows and (fine task) b-sweep for `seed`; writes metrics.json.

    `tasks` maps a task name to (frames folder, labels table).
    """
    seed_everything(derive_seed(seed, "strap"), threads)
    chosen = selected(tuning_files)
    backbone = load_backbone(backbone_dir).to(resolve_device(params["train"]["device"]))
    metrics: dict[str, Any] = {"seed": seed, "layers": len(blocks(backbone)), "tasks": {}}
    for name in TASKS:
        frames_dir, labels = tasks[name]
        rows = params["rows"] if name == "fine" else params["coarse_rows"]
        metrics["tasks"][name] = run_task(
            name,
            backbone,
            load_task(frames_dir, labels),
            rows,
            chosen,
            params,
            seed,
            sweep=name == "fine",
        )
    write_json(out_path, metrics)
    return metrics
