"""Tuning inside the workflow: each method's key hyperparameter, chosen on the tuning seeds.

`tune_method` (the `vngct_tune` job, one per method) runs the continual stream on each of the
top-level `tuning_seeds` (disjoint from the table's seeds) once per point of the method's grid
(params `tune.grid.<method>`) and writes a `core.tuning` record. Every method gets a grid of
the same size and the same budget (`tune`): per task, `train_fraction` of the task's training
split to train on and a disjoint `validation_fraction` of it to score on, both drawn from the
tuning seed, and the table's epochs. The score is the average accuracy over the stream
(`metrics.average_accuracy`, ranked among each task's answers) on those held-out validation
items; no test item of the stream is ever read. A trial whose training loss is not finite
scores NaN and is never selected.

A trial is the table's run on the tuning seed with the trial's values: the same model folder,
seeding (the seed's LoRA adapters, batch order and random gate, from derive_seed(seed, study,
…)), `Training` and `continual.run_stream`; only the items differ. The random gate's trials
route at the rates VNG-CT had on the same tuning seed at VNG-CT's selected point (the VNG-CT
record keeps them, `routing`), as its table runs route at VNG-CT's rates of the same seed.

Axes (`tuned_training`): any field of `continual.Training` (`ewc_strength`, `gate_floor`,
`calibration_weight`, ...), or `lr_scale`, a factor on the three paths' learning rates
(language, visual, calibration) that keeps the card's ratios between them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.tuning import tune
from reprolab.studies.vngct.spec import MATCHED, METHODS, STUDY

METRIC = "average_accuracy"
"""What a trial scores: average accuracy over the stream on the held-out validation items."""
LR_AXES = ("lr_language", "lr_visual", "lr_calibration")
"""The learning rates `lr_scale` multiplies."""


def tuned_training(training: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """`training` params with tuned `values` applied: `lr_scale` multiplies the three learning
    rates, any other name replaces that field. An unknown name is an error."""
    out = dict(training)
    for name, value in values.items():
        if name == "lr_scale":
            for key in LR_AXES:
                out[key] = float(training[key]) * float(value)
        elif name in training:
            out[name] = value
        else:
            raise ValueError(f"tuning axis {name!r} is neither lr_scale nor a training field")
    return out


def applied_training(
    training: Mapping[str, Any], record: Mapping[str, Any], method: str
) -> dict[str, Any]:
    """The training params of a table run of `method`: its tuning record's selected values
    applied (`tuned_training`); a record of another method is an error."""
    if record["method"] != method:
        raise ValueError(f"tuning record of {record['method']!r} given to a run of {method!r}")
    return tuned_training(training, record["selected"])


def split_rows(
    size: int, train_fraction: float, validation_fraction: float, seed: int, task: str
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint rows of a training split of `size` items: those to train on and the held-out
    ones to score on, drawn from (seed, study, "validation", task); each at least one row."""
    n_train = max(1, round(train_fraction * size))
    n_val = max(1, round(validation_fraction * size))
    if n_train + n_val > size:
        raise ValueError(f"task {task}: {size} training items cannot give {n_train} + {n_val}")
    rows = np.random.default_rng(derive_seed(seed, STUDY, "validation", task)).permutation(size)
    return np.sort(rows[:n_train]), np.sort(rows[n_train : n_train + n_val])


def _key(values: Mapping[str, Any]) -> str:
    return json.dumps(dict(values), sort_keys=True)


def tune_method(
    method_name: str,
    stream_yaml: str | Path,
    model_dir: str | Path,
    params: dict[str, Any],
    tuning_seeds: Sequence[int],
    threads: int,
    matched_record: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The tuning record of one method (see the module docstring); `matched_record` is the
    tuning record of the method whose routing rates `method_name` copies (`spec.MATCHED`)."""
    import torch

    from reprolab.models.tiny_vlm import tokens_per_image
    from reprolab.preprocess.instr.stream import load_stream
    from reprolab.studies.vngct.continual import Training, run_stream
    from reprolab.studies.vngct.data import load_stream_data
    from reprolab.studies.vngct.jobs import load_model
    from reprolab.studies.vngct.metrics import average_accuracy, slice_matrix
    from reprolab.studies.vngct.vision import TowerFeatures

    method = METHODS[method_name]
    seeds = [int(s) for s in tuning_seeds]
    tuning = params["tune"]
    rates: dict[int, list[float]] = {}
    if method_name in MATCHED:
        if matched_record is None or matched_record.get("method") != MATCHED[method_name]:
            raise ValueError(f"{method_name} needs the tuning record of {MATCHED[method_name]}")
        if [int(s) for s in matched_record["tuning_seeds"]] != seeds:
            raise ValueError(
                f"{MATCHED[method_name]}'s tuning record has tuning seeds "
                f"{matched_record['tuning_seeds']}, not {seeds}"
            )
        rates = {s: list(r) for s, r in zip(seeds, matched_record["routing"], strict=True)}
    stream = load_stream(stream_yaml)
    epochs = [int(params["epochs"][task.name]) for task in stream.tasks]
    data_cache: dict[str, Any] = {}
    routing: dict[tuple[str, int], list[float]] = {}

    def evaluate(values: dict[str, Any], seed: int) -> float:
        stream_seed = derive_seed(seed, STUDY, "stream")
        seed_everything(stream_seed, threads)
        adapter, processor = load_model(model_dir, params, seed)
        if "data" not in data_cache:  # one processor per folder: tokenise once
            data_cache["data"] = load_stream_data(
                stream,
                processor,
                tokens_per_image(adapter.model.config),
                params["prompt_template"],
                params.get("scoring"),
            )
        data = data_cache["data"]
        device = adapter.model.device
        tasks = []
        for task in data.tasks:
            fit, held = split_rows(
                len(task.train),
                float(tuning["train_fraction"]),
                float(tuning["validation_fraction"]),
                seed,
                task.name,
            )
            tasks.append(
                replace(
                    task,
                    train=task.train.take(torch.as_tensor(fit)).to(device),
                    test=task.train.take(torch.as_tensor(held)).to(device),
                )
            )
        training = Training(**tuned_training(params["training"], values))
        features = TowerFeatures(
            adapter,
            data.images,
            bool(params["runtime"]["cache_features"]),
            training.eval_batch_size,
        )
        result = run_stream(
            adapter, features, tasks, epochs, method, training, stream_seed, rates.get(seed)
        )
        routing[(_key(values), seed)] = [task["rate"] for task in result.routing]
        every = [np.ones(len(task.test), dtype=bool) for task in tasks]
        score = average_accuracy(slice_matrix(result.correct, every))
        print(f"{method_name} {values} seed {seed}: {METRIC} {score:.3f} ({result.wall_s:.1f} s)")
        del adapter, features
        return score if all(math.isfinite(x) for x in result.train_loss) else math.nan

    record = tune(method_name, tuning["grid"][method_name], evaluate, seeds, METRIC, "max")
    data_cache["data"].images.close()
    if method.gate != "all":  # the selected point's routing rates per tuning seed
        record["routing"] = [routing[(_key(record["selected"]), s)] for s in seeds]
    record["budget"] = {
        "epochs": dict(zip([t.name for t in stream.tasks], epochs, strict=True)),
        "train_fraction": float(tuning["train_fraction"]),
        "validation_fraction": float(tuning["validation_fraction"]),
    }
    if rates:
        record["matched_routing"] = [rates[s] for s in seeds]
    return record
