"""The nas jobs behind the rules: the fact LM and its world (`nas_lm`), and one edit-stream seed
(`nas_run`); the tuning job is tune.py.

A run job edits its seed's stream with every method of the params, each from the unedited
model, and writes per method the per-batch norms, the checkpoint scores, the growth fits of
‖W‖ and ‖v*‖, the horizon and the long-run score. What the methods share is made once per job
on the unedited model: the covariance of each edit layer's keys (at the ridge nas_tune chose),
the NAS anchors (measured on the stream's first `anchor_edits` requests), the openings.

Sources of a run (params `stream.source`):

* `world`: the fact world of `nas_lm` and its GPT-2; covariance and generic texts are the
  world's training sentences and arithmetic, drawn from generators of fixed seeds;
* `counterfact` / `zsre`: the file `stream.file` in its released format (counterfact.py), edited
  on the causal LM in `model`; each seed draws its stream from the file's evaluation part, each
  tuning seed from its tuning part (the last `stream.tuning_share` of its good requests), so no
  request is both tuned on and evaluated; covariance and generic texts are the lines of
  `texts.file`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerBase

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.io import write_json
from reprolab.core.operations import count_operations
from reprolab.core.tuning import selected
from reprolab.models.fact_lm import train_fact_lm, training_sentences
from reprolab.models.facts import World, WorldSpec, arithmetic, make_world, read_world, write_world
from reprolab.studies.nas.editing import DeltaSolver, covariance, value_matrix
from reprolab.studies.nas.growth import growth_fits, horizon, long_run_score
from reprolab.studies.nas.requests import EditRequest
from reprolab.studies.nas.sequential import (
    Editing,
    Method,
    SequentialRun,
    anchor_norms,
    generic_loss,
)
from reprolab.studies.nas.world_stream import edit_stream, world_openings

log = logging.getLogger(__name__)
TUNED = "editing"
"""The tuning record's method: the covariance weight and ridge every editor shares."""


def train_lm(
    params: Mapping[str, Any], model_dir: str | Path, world_path: str | Path, threads: int
) -> dict[str, Any]:
    """Draw the params' fact world, write it, and train the fact LM on it."""
    world = make_world(WorldSpec(**params["world"]))
    write_world(world_path, world)
    spec = {k: v for k, v in params["lm"].items() if k not in ("steps", "seed")}
    record = train_fact_lm(
        world, spec, int(params["lm"]["steps"]), int(params["lm"]["seed"]), model_dir, threads
    )
    log.info("fact LM: accuracy %s", record["accuracy"])
    return record


def load_model(folder: str | Path, device: str) -> torch.nn.Module:
    """A causal LM folder, loaded offline for editing (evaluation mode) on the params' device
    (``auto``: CUDA when present)."""
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    return model.to(resolve_device(device)).eval()


def editing_of(params: Mapping[str, Any], tuned: Mapping[str, Any]) -> Editing:
    """The shared editing settings, with the tuned covariance weight."""
    edit = params["editing"]
    return Editing(
        layers=tuple(int(layer) for layer in edit["layers"]),
        weight=float(tuned["weight"]),
        solver=DeltaSolver(**edit["solver"]),
        batch_size=int(edit["batch_size"]),
        eval_every=int(edit["eval_every"]),
    )


def text_lines(path: str | Path, count: int) -> list[str]:
    """The first `count` non-empty lines of a text file; ValueError naming the file if fewer."""
    lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()]
    found = [line for line in lines if line]
    if len(found) < count:
        raise ValueError(f"{path}: {len(found)} non-empty lines, {count} needed")
    return found[:count]


def world_source(
    params: Mapping[str, Any], world: World, seed: int, edits: int
) -> tuple[list[EditRequest], list[str], list[str], list[str]]:
    """A world stream of `edits` requests for `seed`: requests, openings, covariance texts and
    generic texts."""
    stream = params["stream"]
    requests = edit_stream(
        world, edits, int(params["editing"]["batch_size"]), int(stream["neighbours"]), seed
    )
    openings = world_openings(world, int(stream["openings"]), seed)
    share = float(params["lm"]["arithmetic_share"])
    texts = training_sentences(
        world,
        int(params["covariance"]["texts"]),
        share,
        np.random.default_rng(derive_seed(0, "nas", "covariance")),
    )
    rng = np.random.default_rng(derive_seed(0, "nas", "generic"))
    generic = [arithmetic(rng) for _ in range(int(params["generic"]["texts"]))]
    return requests, openings, texts, generic


def file_source(
    params: Mapping[str, Any], seed: int, edits: int, tuning: bool
) -> tuple[list[EditRequest], list[str], list[str], list[str]]:
    """A paper-scale stream for `seed`: `edits` good requests of the dataset file (bad records
    are logged and skipped) drawn in the seed's order from its tuning part (the last
    `stream.tuning_share` of the file's good requests) or from the rest, the params' openings,
    and covariance and generic texts from the texts file."""
    from reprolab.studies.nas.counterfact import read_counterfact, read_zsre

    stream = params["stream"]
    reader = read_counterfact if stream["source"] == "counterfact" else read_zsre
    found = reader(stream["file"])
    for message in found.skipped:
        log.warning("skipped %s", message)
    split = len(found.requests) - round(float(stream["tuning_share"]) * len(found.requests))
    part = found.requests[split:] if tuning else found.requests[:split]
    if len(part) < edits:
        which = "tuning" if tuning else "evaluation"
        raise ValueError(f"{stream['file']}: {len(part)} good {which} requests, {edits} needed")
    order = np.random.default_rng(derive_seed(seed, "nas", "file stream")).permutation(len(part))
    requests = [part[int(i)] for i in order[:edits]]
    count_cov, count_generic = int(params["covariance"]["texts"]), int(params["generic"]["texts"])
    lines = text_lines(params["texts"]["file"], count_cov + count_generic)
    return requests, ["", *stream["openings"]], lines[:count_cov], lines[count_cov:]


def stream_source(
    params: Mapping[str, Any],
    world_path: str | Path | None,
    seed: int,
    edits: int,
    tuning: bool = False,
) -> tuple[list[EditRequest], list[str], list[str], list[str]]:
    """The requests, openings, covariance and generic texts of the params' stream source for
    `seed` (the module docstring's sources)."""
    if params["stream"]["source"] == "world":
        return world_source(params, read_world(world_path), seed, edits)
    return file_source(params, seed, edits, tuning)


def covariances(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    layers: Sequence[int],
    texts: Sequence[str],
    ridge: float,
) -> dict[int, torch.Tensor]:
    """The key covariance of each edit layer on the unedited model."""
    return {layer: covariance(model, layer, texts, tokenizer, ridge) for layer in layers}


def run_methods(
    params: Mapping[str, Any],
    model_dir: str | Path,
    requests: Sequence[EditRequest],
    openings: Sequence[str],
    cov_texts: Sequence[str],
    generic: Sequence[str],
    tuned: Mapping[str, Any],
    methods: Mapping[str, Method],
    seed: int,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Edit `requests` with each method from the unedited model; the record of each method and
    the anchors."""
    editing = editing_of(params, tuned)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    unedited = load_model(model_dir, params["device"])
    moments = covariances(unedited, tokenizer, editing.layers, cov_texts, float(tuned["ridge"]))
    count = int(params["anchor_edits"])
    anchors = anchor_norms(unedited, tokenizer, requests[:count], openings, editing)
    log.info("anchors %s", anchors)
    records = {}
    for name, method in methods.items():
        torch.manual_seed(derive_seed(seed, "nas", name))
        run = SequentialRun(
            load_model(model_dir, params["device"]),
            tokenizer,
            moments,
            openings,
            editing,
            method,
            anchors,
            derive_seed(seed, "nas", name, "random"),
        )
        trace = run.run(requests, generic, f"nas {name} seed {seed}", show_progress)
        records[name] = {**trace, **summarise(trace)}
        done = records[name]
        log.info("%s: horizon %s, long-run %.3f", name, done["horizon"], done["long_run"])
    return {
        "anchors": anchors,
        "generic_loss_unedited": generic_loss(unedited, tokenizer, generic),
        "weight_unedited": [
            float(value_matrix(unedited, layer).detach().norm()) for layer in editing.layers
        ],
        "operations": edit_operations(
            model_dir,
            tokenizer,
            moments,
            openings,
            editing,
            anchors,
            requests,
            methods,
            params["device"],
        ),
        "methods": records,
    }


def edit_operations(
    model_dir: str | Path,
    tokenizer: PreTrainedTokenizerBase,
    moments: dict[int, torch.Tensor],
    openings: Sequence[str],
    editing: Editing,
    anchors: dict[str, float],
    requests: Sequence[EditRequest],
    methods: Mapping[str, Method],
    device: str,
) -> dict[str, int]:
    """The counted operations (core.operations: FLOPs of matrix products, one per element
    otherwise) of each method's first batch of edits on the unedited model: NAS's overhead is
    measured as work, not wall time, so metrics.json stays byte-identical."""
    batch = list(requests[: editing.batch_size])
    counts = {}
    for name, method in methods.items():
        run = SequentialRun(
            load_model(model_dir, device), tokenizer, moments, openings, editing, method, anchors, 0
        )
        torch.manual_seed(0)
        counts[name], _ = count_operations(lambda run=run: run.edit(batch))
    return counts


def summarise(trace: Mapping[str, Any]) -> dict[str, Any]:
    """A trace's growth fits (the target layer's ‖W‖; the mean ‖v*‖; None for a stream of
    fewer than 3 batches, too short to fit), horizon and long-run score."""
    batches, checkpoints = trace["batches"], trace["checkpoints"]
    edits = [b["edits"] for b in batches]
    reach, censored = horizon(checkpoints, 0.5)
    fits = len(batches) >= 3
    weight = [b["weight_norm"][-1] for b in batches]
    vstar = [float(np.mean(b["vstar"])) for b in batches]
    return {
        "weight_growth": growth_fits(edits, weight) if fits else None,
        "vstar_growth": growth_fits(edits, vstar) if fits else None,
        "horizon": reach,
        "horizon_censored": censored,
        "long_run": long_run_score(checkpoints),
        "single_edit_efficacy": checkpoints[0]["efficacy"],
    }


def methods_of(params: Mapping[str, Any]) -> dict[str, Method]:
    """The params' methods, by name."""
    return {name: Method(**spec) for name, spec in params["methods"].items()}


def run_seed(
    params: Mapping[str, Any],
    seed: int,
    model_dir: str | Path,
    world_path: str | Path | None,
    tuned_path: str | Path,
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """One edit-stream seed: every method on the seed's stream; write metrics.json."""
    seed_everything(seed, threads)
    tuned = selected([tuned_path])[TUNED]
    edits = int(params["stream"]["edits"])
    source = stream_source(params, world_path, seed, edits)
    record = run_methods(params, model_dir, *source, tuned, methods_of(params), seed)
    metrics = {"seed": seed, "edits": edits, "tuned": tuned, **record}
    write_json(out_path, metrics)
    return metrics
