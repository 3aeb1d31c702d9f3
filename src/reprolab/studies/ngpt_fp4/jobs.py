"""ngpt_fp4's jobs: what one architecture and seed trains and measures, and the mechanism sweep.

A **run job** (architecture, seed) trains one model per recipe of params `recipes`, all from the
same initial weights and on the same batches (the seed's), so every recipe's losses pair with
the full-precision run of that seed; it records each run's training curve, final validation
loss, loss spikes, largest gradient per block linear layer and sharpness (the top Hessian
eigenvalue of the full-precision loss at the trained weights).

A **mechanism job** (architecture, seed) trains full-precision models of params `mechanism`
at every hidden size of `mechanism.hiddens` (heads of `head_width`, the run's depth and
context, `mechanism.steps` steps) and measures, per block linear layer, the SNR and product
and noise correlation of its forward GEMM's dot products quantised by the plain NVFP4 recipe
(per-tensor scale for both models, so range effects are isolated), on fixed validation
windows. Both jobs train at the learning rate the architecture's tuning record selected.

Every seed is derived from (seed, study, purpose), never from the job's place in a batch; the
streams stay on the CPU and batches move to the job's device (params `device`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.io import write_json
from reprolab.core.tuning import read_tuning
from reprolab.studies.ngpt_fp4.corpus import char_vocabulary, encode, read_corpus, split_corpus
from reprolab.studies.ngpt_fp4.mechanism import layer_stats
from reprolab.studies.ngpt_fp4.models import CharLM, LMConfig
from reprolab.studies.ngpt_fp4.nvfp4 import recipe_named
from reprolab.studies.ngpt_fp4.sharpness import top_hessian_eigenvalue
from reprolab.studies.ngpt_fp4.training import Schedule, TrainRecord, on_device_of, train, windows
from reprolab.studies.ngpt_fp4.workflow_io import check_architecture, check_params

LOG = logging.getLogger(__name__)
STUDY = "ngpt_fp4"
MECHANISM_RECIPE = "nvfp4"
"""The recipe whose dot products the mechanism job measures: plain NVFP4 (per-tensor scale)."""


class Streams:
    """The corpus as token streams of uint8 ids (a byte per character, so a paper-scale corpus
    fits in memory): the training head, the validation tail, the vocabulary."""

    def __init__(self, corpus_path: str | Path, val_share: float) -> None:
        text, _ = read_corpus(corpus_path)
        self.vocabulary = char_vocabulary(text)
        split = split_corpus(encode(text, self.vocabulary), val_share)
        self.train = torch.from_numpy(split.train)
        self.val = torch.from_numpy(split.val)


def model_config(
    params: dict[str, Any], arch: str, vocab: int, hidden: int | None = None
) -> LMConfig:
    """The model of params `model` for `arch`; at another `hidden` (the mechanism sweep) the
    heads keep the width of the run's heads."""
    check_architecture(arch)
    spec = params["model"]
    heads = spec["heads"]
    if hidden is not None:
        heads = max(1, hidden // (spec["hidden"] // spec["heads"]))
    return LMConfig(
        vocab=vocab,
        hidden=hidden or spec["hidden"],
        layers=spec["layers"],
        heads=heads,
        context=spec["context"],
        normalized=arch == "ngpt",
    )


def schedule(params: dict[str, Any], lr: float, steps: int | None = None) -> Schedule:
    """params `train` at learning rate `lr` (and `steps` when given)."""
    spec = params["train"]
    return Schedule(
        steps=steps or spec["steps"],
        batch=spec["batch"],
        lr=lr,
        weight_decay=spec["weight_decay"],
        log_every=spec["log_every"],
    )


def tuned_lr(tuning_path: str | Path, arch: str) -> float:
    """The learning rate `arch`'s tuning record selected; ValueError naming the file when the
    record is another architecture's."""
    record = read_tuning(tuning_path)
    if record["method"] != arch:
        raise ValueError(f"{tuning_path}: a tuning record of {record['method']!r}, not {arch!r}")
    return float(record["selected"]["lr"])


def train_model(
    params: dict[str, Any],
    arch: str,
    recipe: str,
    lr: float,
    seed: int,
    streams: Streams,
    *,
    hidden: int | None = None,
    steps: int | None = None,
) -> tuple[CharLM, TrainRecord]:
    """Train `arch` under `recipe` from the seed's initial weights on the seed's batches (both
    independent of the recipe and the architecture's step size), on params `device`."""
    config = model_config(params, arch, len(streams.vocabulary), hidden)
    torch.manual_seed(derive_seed(seed, STUDY, arch, config.hidden, "init"))
    model = CharLM(config, seed=derive_seed(seed, STUDY, arch, config.hidden, "rounding"))
    model.to(resolve_device(params["device"]))
    model.set_recipe(recipe_named(recipe, params["static_headroom"]))
    record = train(
        model,
        streams.train,
        streams.val,
        schedule(params, lr, steps),
        derive_seed(seed, STUDY, "batches"),
        params["train"]["val_batches"],
        label=f"{arch} d={config.hidden} {recipe}",
    )
    return model, record


def sharpness_batches(
    params: dict[str, Any], model: CharLM, streams: Streams, seed: int
) -> list[tuple[torch.Tensor, ...]]:
    """The fixed training batches the sharpness of every run of a seed is measured on."""
    generator = torch.Generator().manual_seed(derive_seed(seed, STUDY, "sharpness"))
    return [
        on_device_of(
            model,
            windows(streams.train, params["train"]["batch"], model.config.context, generator),
        )
        for _ in range(params["sharpness"]["batches"])
    ]


def run_record(
    params: dict[str, Any], model: CharLM, record: TrainRecord, streams: Streams, seed: int
) -> dict[str, Any]:
    """What metrics.json keeps of one run."""
    sharpness = top_hessian_eigenvalue(
        model,
        sharpness_batches(params, model, streams, seed),
        params["sharpness"]["iterations"],
        derive_seed(seed, STUDY, "sharpness", "start"),
    )
    return {
        "val_loss": record.val_loss,
        "losses": record.losses,
        "spikes": record.spikes,
        "max_gradients": record.max_gradients,
        "max_gradient": max(record.max_gradients.values()),
        "sharpness": sharpness.eigenvalue,
        "sharpness_estimates": sharpness.estimates,
    }


def job_inputs(
    params: dict[str, Any],
    arch: str,
    seed: int,
    tuning_path: str | Path,
    corpus_path: str | Path,
    threads: int,
    *purpose: str,
) -> tuple[float, Streams]:
    """What a run or mechanism job starts from, after checking its params and seeding the
    process from (seed, study, arch, purpose): the tuned learning rate and the token streams."""
    check_params(params)
    seed_everything(derive_seed(seed, STUDY, arch, *purpose), threads)
    return tuned_lr(tuning_path, arch), Streams(corpus_path, params["corpus"]["val_share"])


def run_job(
    params: dict[str, Any],
    arch: str,
    seed: int,
    tuning_path: str | Path,
    corpus_path: str | Path,
    out_path: str | Path,
    threads: int = 1,
) -> dict[str, Any]:
    """Train `arch` on `seed` under every recipe of params `recipes` at the tuned learning rate
    and write metrics.json to `out_path` (module docstring)."""
    lr, streams = job_inputs(params, arch, seed, tuning_path, corpus_path, threads)
    runs = {}
    for recipe in params["recipes"]:
        start = time.perf_counter()
        model, record = train_model(params, arch, recipe, lr, seed, streams)
        runs[recipe] = run_record(params, model, record, streams, seed)
        LOG.info(
            "%s seed %d %s: val loss %.4f, %d spikes, sharpness %.3g (%.0f s)",
            arch,
            seed,
            recipe,
            record.val_loss,
            len(record.spikes),
            runs[recipe]["sharpness"],
            time.perf_counter() - start,
        )
    metrics = {"arch": arch, "seed": seed, "lr": lr, "log_every": params["train"]["log_every"]}
    metrics["runs"] = runs
    write_json(out_path, metrics)
    return metrics


def mechanism_job(
    params: dict[str, Any],
    arch: str,
    seed: int,
    tuning_path: str | Path,
    corpus_path: str | Path,
    out_path: str | Path,
    threads: int = 1,
) -> dict[str, Any]:
    """Measure the quantised dot products of `arch` at every hidden size of params `mechanism`
    (module docstring) and write them to `out_path`: per hidden size, per layer and averaged
    over layers."""
    lr, streams = job_inputs(params, arch, seed, tuning_path, corpus_path, threads, "mechanism")
    spec = params["mechanism"]
    recipe = recipe_named(MECHANISM_RECIPE, params["static_headroom"])
    sizes = {}
    for hidden in spec["hiddens"]:
        model, record = train_model(
            params, arch, "fp32", lr, seed, streams, hidden=hidden, steps=spec["steps"]
        )
        generator = torch.Generator().manual_seed(derive_seed(seed, STUDY, "mechanism", hidden))
        tokens, _ = on_device_of(
            model, windows(streams.val, spec["batch"], model.config.context, generator)
        )
        stats = layer_stats(model, tokens, recipe, spec["pairs"], generator)
        layers = {name: asdict(value) for name, value in stats.items()}
        sizes[str(hidden)] = {
            "val_loss": record.val_loss,
            "layers": layers,
            **{
                key: float(np.mean([layer[key] for layer in layers.values()]))
                for key in ("snr_db", "rho", "rho_noise")
            },
        }
        LOG.info(
            "%s seed %d d=%d: SNR %.2f dB, rho %.4f, rho_e %.4f",
            arch,
            seed,
            hidden,
            sizes[str(hidden)]["snr_db"],
            sizes[str(hidden)]["rho"],
            sizes[str(hidden)]["rho_noise"],
        )
    metrics = {"arch": arch, "seed": seed, "lr": lr, "recipe": MECHANISM_RECIPE, "sizes": sizes}
    write_json(out_path, metrics)
    return metrics


def tuning_score(
    params: dict[str, Any], arch: str, lr: float, seed: int, streams: Streams
) -> float:
    """The tuning score of `arch` at `lr` on tuning seed `seed`: the final validation loss of
    the full-precision run (neither architecture is tuned for FP4); NaN when it diverged."""
    _, record = train_model(params, arch, "fp32", lr, seed, streams)
    return record.val_loss if np.isfinite(record.val_loss) else float("nan")
