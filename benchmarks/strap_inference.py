"""STRAP's inference rate against uniform adapter placements, as ratios in one process.

Builds the strap backbone that params.yaml describes (randomly initialised: the rate does not
depend on the weights; or the pre-trained folder with `--backbone data/strap/backbone`), puts
each placement's adapters on it and times forward passes over the same batch of clips, in
rounds that visit the placements in turn so that machine noise hits each alike. Prints each
placement's median clips/s and its ratio to ST-Adapter's (the study's table counts FLOPs
instead, which are exact; this is the wall-clock check of the abstract's "less inference
time").

    python benchmarks/strap_inference.py [--repeat 7] [--batch 32] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from reprolab.core.params import load_yaml, study_params
from reprolab.studies.strap.adapters import placement
from reprolab.studies.strap.backbone import blocks, build_vit, load_backbone
from reprolab.studies.strap.model import AdaptedVideoModel

ROWS = ("st_adapter", "aim", "temporal_all", "strap")
REFERENCE = "st_adapter"
FRAMES = 6
BOUNDARY = 3


def clips_per_second(model: AdaptedVideoModel, clips: torch.Tensor, passes: int) -> float:
    """Clips per second of `passes` forward passes over `clips`."""
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(passes):
            model(clips)
    return passes * len(clips) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="rounds over the placements")
    parser.add_argument("--passes", type=int, default=5, help="forward passes per timing")
    parser.add_argument("--batch", type=int, default=32, help="clips per forward pass")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--backbone", help="a saved backbone folder (default: random init)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    params = study_params(load_yaml("params.yaml"), "strap")
    spec = params["backbone"]
    backbone = load_backbone(args.backbone) if args.backbone else build_vit(spec, 0)
    layers = len(blocks(backbone))
    size = int(backbone.config.image_size)
    clips = torch.randn(args.batch, FRAMES, 3, size, size)
    bottleneck = int(params["adapters"]["bottleneck"])

    def adapted(row: str) -> AdaptedVideoModel:
        plan = placement(row, layers, BOUNDARY if row == "strap" else None)
        pool, conv_std = str(params["train"]["pool"]), float(params["adapters"]["conv_std"])
        return AdaptedVideoModel(backbone, plan, bottleneck, 6, pool, conv_std)

    rates: dict[str, list[float]] = {row: [] for row in ROWS}
    for _ in range(args.repeat):
        for row in ROWS:  # one placement hooked at a time, built afresh each round
            model = adapted(row)
            rates[row].append(clips_per_second(model, clips, args.passes))
            model.remove_hooks()
    reference = statistics.median(rates[REFERENCE])
    print(f"{'placement':14s} {'clips/s':>9s} {'ratio to ' + REFERENCE:>22s}")
    for row in ROWS:
        median = statistics.median(rates[row])
        print(f"{row:14s} {median:9.1f} {median / reference:22.3f}")


if __name__ == "__main__":
    main()
