"""Lifting time of normlift's rows on one smoke scene, as ratios to the weighted average.

In one process, alternating so that machine noise hits every row alike, each row lifts the
same scene from its lifting views' weights and features: WAvg (back-projection, b/W), NormLift
(back-projection, r, N_eff, ρ and mode voting), kNN averaging, MaxW and Distill (its Adam
steps). Settings are params.yaml's normlift section at `--scale` with the grids' middle points
for the tuned values (time barely depends on them), one thread. The study's table reports the
deterministic count of multiply-adds instead; this measures what they cost here.

    python benchmarks/normlift_lifting.py [--scale smoke] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from reprolab.core.params import load_yaml, study_params
from reprolab.studies.normlift import lifting as lf
from reprolab.studies.normlift.dataset import lifting_views, make_scene, select_views


def middle(grid: dict[str, list]) -> dict:
    """The middle value of every axis of a grid."""
    return {name: values[len(values) // 2] for name, values in grid.items()}


def rows(params: dict, weights: lf.Weights, features: np.ndarray, centers: np.ndarray) -> dict:
    """Row name → a call that lifts the scene from scratch."""
    grids = params["tune"]["grid"]
    knn, vote = middle(grids["wavg_knn"]), {**params["normlift"], **middle(grids["normlift"])}
    distill = {**params["distill"], **middle(grids["distill"])}

    def normlift() -> np.ndarray:
        back = lf.back_project(weights, features)
        rho = lf.calibrated(lf.reliability(back), lf.effective_support(back))
        return lf.mode_vote(
            lf.normalise(back.b),
            rho,
            centers,
            vote["k"],
            vote["tau"],
            vote["tau_c"],
            vote["passes"],
        )

    return {
        "WAvg": lambda: lf.weighted_average(lf.back_project(weights, features)),
        "NormLift": normlift,
        "WAvg+kNN-avg": lambda: lf.knn_average(
            lf.normalise(lf.back_project(weights, features).b), centers, knn["k"]
        ),
        "MaxW": lambda: lf.max_weight(weights, features),
        "Distill": lambda: lf.distill(weights, features, distill["steps"], distill["lr"], 0),
    }


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds of alternation")
    parser.add_argument("--scale", default="smoke", help="params.yaml scale of the scene")
    args = parser.parse_args()
    params = study_params({**load_yaml("params.yaml"), "scale": args.scale}, "normlift")
    torch.set_num_threads(1)
    scene = make_scene(params["data"], np.random.default_rng(0))
    weights = select_views(scene.weights, lifting_views(scene))
    calls = rows(params, weights, scene.features, scene.gaussians.means)
    times: dict[str, list[float]] = {name: [] for name in calls}
    with threadpool_limits(limits=1):
        for work in calls.values():
            work()  # warm-up
        for _ in range(args.repeat):
            for name, work in calls.items():
                times[name].append(timed(work))
    base = statistics.median(times["WAvg"])
    print(f"scene: {len(scene.gaussians.means)} Gaussians, {weights.nnz} weights, {args.scale}")
    for name, values in times.items():
        seconds = statistics.median(values)
        print(
            f"{name:>14}: {seconds:8.3f} s (median of {args.repeat}), {seconds / base:7.2f}x WAvg"
        )


if __name__ == "__main__":
    main()
