"""NICER's condensation and training time against the full bags, as ratios in one process.

Draws a synthetic cohort of tile features (seeded numpy: slides of `--tiles` tiles in 64
dimensions, each a mixture of one to seven of eight shared "tissue" centres, standardised as the
study standardises a cohort), then times, in rounds that visit the rows in turn so that machine
noise hits each alike: condensing every slide with each condenser at one budget, and one
training epoch of the study's classifier on the condensed sets and on the full bags. Prints each
row's median times and their ratios to one epoch on the full bags (the study's table counts
distance or kernel evaluations and instances per epoch instead, which are exact; this is the
wall-clock check). The adaptive rows' DP-means threshold is calibrated on the cohort once, before
any timing; its cost is printed on its own line.

Model, training and condensation settings are the nicer section of params.yaml at its active
scale (the matching step size is the section's `condense.dm_lr`, not a tuned one).

    python benchmarks/nicer_condensation.py [--repeat 3] [--slides 64] [--budget B] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from reprolab.core.params import load_yaml, study_params
from reprolab.studies.nicer.condense import (
    Kernel,
    calibrate_lambda,
    condense,
    median_sigma2,
    opening_radii,
)
from reprolab.studies.nicer.rows import ADAPTIVE, CONDENSERS, FULL
from reprolab.studies.nicer.train import WeightedSet, build_classifier, train_epoch

DIM = 64
CENTRES = 8


def synthetic_cohort(
    slides: int, tiles: tuple[int, int], seed: int
) -> tuple[list[np.ndarray], np.ndarray]:
    """Standardised features (n_s, DIM) per slide and labels (a slide is positive when it shows
    centre 0, the "lesion")."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 3.0, (CENTRES, DIM))
    features, labels = [], []
    for _ in range(slides):
        n = int(rng.integers(tiles[0], tiles[1] + 1))
        present = rng.choice(CENTRES, int(rng.integers(1, CENTRES)), replace=False)
        members = rng.choice(present, n)
        features.append(centres[members] + rng.normal(0.0, 1.0, (n, DIM)))
        labels.append(int(0 in present))
    pooled = np.concatenate(features)
    mean, std = pooled.mean(0), pooled.std(0) + 1e-6
    return [((x - mean) / std).astype(np.float32) for x in features], np.array(labels)


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds `work` took, and what it returned."""
    start = time.perf_counter()
    out = work()
    return time.perf_counter() - start, out


def epoch(
    sets: Sequence[WeightedSet], labels: np.ndarray, params: Mapping[str, Any], seed: int
) -> Callable[[], None]:
    """One training epoch of the study's classifier over `sets` (train.train_classifier's
    loop), its model and optimiser built before the clock starts."""
    settings = params["train"]
    torch.manual_seed(seed)
    model = build_classifier(sets[0][0].shape[1], params["model"])
    optimiser = torch.optim.Adam(
        model.parameters(), lr=1e-3, weight_decay=float(settings["weight_decay"])
    )
    batch_size = int(settings["batch_size"])
    targets = torch.as_tensor(labels, dtype=torch.float32)
    perm = np.random.default_rng(seed).permutation(len(sets))

    def run() -> None:
        train_epoch(model, optimiser, sets, targets, perm, batch_size)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds over the rows")
    parser.add_argument("--slides", type=int, default=64)
    parser.add_argument("--tiles", type=int, nargs=2, default=(100, 200), help="min max")
    parser.add_argument("--budget", type=int, help="default: params.yaml nicer.budget")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per training timing")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    params = study_params(load_yaml("params.yaml"), "nicer")
    budget = int(args.budget or params["budget"])
    settings = params["condense"]
    features, labels = synthetic_cohort(args.slides, tuple(args.tiles), args.seed)
    kernel = Kernel(median_sigma2(features))
    calibration, lam = timed(
        lambda: calibrate_lambda([opening_radii(torch.from_numpy(x)) for x in features], budget)
    )

    def condensed(row: str) -> list[WeightedSet]:
        generator = torch.Generator().manual_seed(args.seed)
        out = [condense(row, x, budget, lam, kernel, settings, generator) for x in features]
        return [(c.prototypes, c.weights) for c in out]

    full = [(x, np.full(len(x), 1.0 / len(x), np.float32)) for x in features]
    condense_s: dict[str, list[float]] = {row: [] for row in CONDENSERS}
    epoch_s: dict[str, list[float]] = {row: [] for row in (FULL, *CONDENSERS)}
    sizes: dict[str, float] = {FULL: float(np.mean([len(x) for x in features]))}
    for _ in range(args.repeat):
        for row in (FULL, *CONDENSERS):
            if row == FULL:
                sets = full
            else:
                seconds, sets = timed(lambda row=row: condensed(row))
                condense_s[row].append(seconds)
                sizes[row] = float(np.mean([len(c) for c, _ in sets]))
            run = epoch(sets, labels, params, args.seed)
            seconds, _ = timed(lambda run=run: [run() for _ in range(args.epochs)])
            epoch_s[row].append(seconds / args.epochs)
    baseline = statistics.median(epoch_s[FULL])
    print(
        f"{args.slides} slides of {args.tiles[0]}-{args.tiles[1]} tiles ({DIM}-d), budget "
        f"{budget}, batch {params['train']['batch_size']}, {args.threads} thread(s); "
        f"one epoch on the full bags: {1e3 * baseline:.1f} ms"
    )
    print(
        f"{'row':10s} {'K/slide':>8s} {'condense s':>11s} {'condense/epoch':>15s} "
        f"{'epoch ms':>9s} {'epoch/epoch':>12s}"
    )
    for row in (FULL, *CONDENSERS):
        epoch_median = statistics.median(epoch_s[row])
        if row == FULL:
            cells = f"{'—':>11s} {'—':>15s}"
        else:
            seconds = statistics.median(condense_s[row])
            cells = f"{seconds:11.3f} {seconds / baseline:15.1f}"
        print(
            f"{row:10s} {sizes[row]:8.2f} {cells} {1e3 * epoch_median:9.2f} "
            f"{epoch_median / baseline:12.3f}"
        )
    print(
        f"λ calibration for {', '.join(ADAPTIVE)} (once per cohort, not in their "
        f"condense times): {calibration:.3f} s = {calibration / baseline:.1f} full-bag epochs"
    )


if __name__ == "__main__":
    main()
