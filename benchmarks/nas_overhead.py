"""NAS's wall-clock overhead over plain editing, as a ratio in one process.

Builds the study's fact world and a GPT-2 of its `lm` size (the nas section of params.yaml at
its active scale; untrained: the cost of an edit does not depend on what the model knows),
the covariances of the edit layers and the anchors, then times one batch of edits (solving δ,
rescaling where the method anchors, the update) for MEMIT and ROME with and without NAS, each
from the same weights, in rounds that visit the methods in turn so that machine noise hits
each alike. Prints each method's median time and its ratio to its plain editor's (the
abstract: negligible overhead). The study's claim counts operations instead, which are exact
(`reprolab.studies.nas.jobs.edit_operations`); this is the wall-clock check.

    python benchmarks/nas_overhead.py [--repeat 20] [--threads 1]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from reprolab.core.params import load_yaml, study_params
from reprolab.models.fact_lm import build_model, fact_tokenizer
from reprolab.models.facts import WorldSpec, make_world
from reprolab.studies.nas.jobs import covariances, editing_of, world_source
from reprolab.studies.nas.sequential import Method, SequentialRun, anchor_norms

METHODS = {
    "memit": Method("memit"),
    "memit_nas": Method("memit", anchor="vstar"),
    "rome": Method("rome"),
    "rome_nas": Method("rome", anchor="vstar"),
}
PLAIN = {"memit": "memit", "memit_nas": "memit", "rome": "rome", "rome_nas": "rome"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed batches per method")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    params = study_params(load_yaml("params.yaml"), "nas")
    world = make_world(WorldSpec(**params["world"]))
    tokenizer = fact_tokenizer(world)
    model = build_model(params["lm"], tokenizer).eval()
    editing = editing_of(params, {"weight": 100.0})
    requests, openings, texts, _ = world_source(params, world, 0, editing.batch_size)
    moments = covariances(model, tokenizer, editing.layers, texts, 1e-3)
    anchors = anchor_norms(model, tokenizer, requests, openings, editing)
    times: dict[str, list[float]] = {name: [] for name in METHODS}
    for _ in range(args.repeat):
        for name, method in METHODS.items():
            run = SequentialRun(
                copy.deepcopy(model), tokenizer, moments, openings, editing, method, anchors, 0
            )
            torch.manual_seed(0)
            start = time.perf_counter()
            run.edit(requests)
            times[name].append(time.perf_counter() - start)
    print(
        f"{len(requests)} edits per batch at layers {list(editing.layers)}, "
        f"{args.repeat} batches per method, {args.threads} thread(s)"
    )
    for name in METHODS:
        median = statistics.median(times[name])
        base = statistics.median(times[PLAIN[name]])
        print(f"{name:>10}: {1e3 * median:8.1f} ms   ratio to {PLAIN[name]}: {median / base:.3f}")


if __name__ == "__main__":
    main()
