"""What emulated NVFP4 costs a training step of ngpt_fp4, and what the fast E2M1 rounding buys.

In one process, alternating so that machine noise hits every variant alike:

1. a training step (forward, backward, optimiser step) of the smoke-scale GPT and nGPT
   (params.yaml `ngpt_fp4`) under each recipe, as a ratio to the full-precision step;
2. NVFP4 quantisation of a 1024 × 512 tensor (the MLP's output gradient at smoke scale) by the
   study's quantiser against a straightforward one that finds the E2M1 spacing with nested
   comparisons and allocates a tensor per operation: the same values, checked here.

    python benchmarks/ngpt_fp4_overhead.py [--repeat 5] [--steps 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from reprolab.core.params import load_yaml, study_params
from reprolab.studies.ngpt_fp4.models import CharLM, LMConfig
from reprolab.studies.ngpt_fp4.nvfp4 import E2M1_MAX, E4M3_MAX, quantize, recipe_named, to_e4m3
from reprolab.studies.ngpt_fp4.training import Schedule, loss_of, optimiser_for


def straightforward_quantize(x: torch.Tensor) -> torch.Tensor:
    """NVFP4 of a 2-D tensor along its rows, written the obvious way (the baseline)."""
    blocks = x.reshape(x.shape[0], -1, 16)
    scale = blocks.abs().amax() / (E4M3_MAX * E2M1_MAX)
    block_scales = to_e4m3(blocks.abs().amax(dim=-1, keepdim=True) / (E2M1_MAX * scale))
    decode = block_scales * scale
    scaled = blocks / torch.where(decode > 0, decode, 1.0)
    magnitude = scaled.abs().clamp(max=E2M1_MAX)
    step = torch.where(magnitude < 2, 0.5, torch.where(magnitude < 4, 1.0, 2.0))
    elements = torch.copysign(torch.round(magnitude / step) * step, scaled)
    return ((elements * block_scales) * scale).reshape(x.shape)


def timed(work: Callable[[], object], repeat: int) -> float:
    """Seconds of one call of `work` (after one warm-up call)."""
    work()
    start = time.perf_counter()
    for _ in range(repeat):
        work()
    return (time.perf_counter() - start) / repeat


def step_work(params: dict, arch: str, recipe: str) -> Callable[[], object]:
    """One training step of the smoke model of `arch` under `recipe`, on a fixed batch."""
    spec = params["model"]
    config = LMConfig(
        96, spec["hidden"], spec["layers"], spec["heads"], spec["context"], arch == "ngpt"
    )
    torch.manual_seed(0)
    model = CharLM(config, seed=0)
    model.set_recipe(recipe_named(recipe, params["static_headroom"]))
    train = params["train"]
    schedule = Schedule(train["steps"], train["batch"], 1e-3, train["weight_decay"], 1)
    optimiser = optimiser_for(model, schedule)
    tokens = torch.randint(0, 96, (train["batch"], spec["context"] + 1))

    def step() -> None:
        optimiser.zero_grad()
        loss_of(model, tokens[:, :-1], tokens[:, 1:]).backward()
        optimiser.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds of alternation")
    parser.add_argument("--steps", type=int, default=20, help="training steps per timing")
    args = parser.parse_args()
    torch.set_num_threads(1)
    params = study_params(load_yaml("params.yaml"), "ngpt_fp4")
    recipes = list(params["recipes"])
    for arch in params["architectures"]:
        works = {recipe: step_work(params, arch, recipe) for recipe in recipes}
        times: dict[str, list[float]] = {recipe: [] for recipe in recipes}
        for _ in range(args.repeat):
            for recipe, work in works.items():
                times[recipe].append(timed(work, args.steps))
        reference = statistics.median(times["fp32"])
        for recipe in recipes:
            median = statistics.median(times[recipe])
            print(
                f"{arch:5s} {recipe:13s} step {1e3 * median:7.1f} ms, "
                f"{median / reference:.2f}x the fp32 step"
            )
    x = torch.randn(1024, 512, generator=torch.Generator().manual_seed(0))
    if not torch.equal(quantize(x, 1), straightforward_quantize(x)):
        raise SystemExit("the two quantisers disagree")
    ours, theirs = [], []
    for _ in range(args.repeat):
        ours.append(timed(lambda: quantize(x, 1), 20))
        theirs.append(timed(lambda: straightforward_quantize(x), 20))
    ratio = statistics.median(theirs) / statistics.median(ours)
    print(
        f"quantise 1024x512: {1e3 * statistics.median(ours):.2f} ms against "
        f"{1e3 * statistics.median(theirs):.2f} ms straightforward: {ratio:.1f}x faster"
    )


if __name__ == "__main__":
    main()
