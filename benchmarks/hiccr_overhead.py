"""HiCCR's wall-clock overhead over its base algorithm, as a ratio in one process.

Builds the study's tiny LLaVA (the hiccr section of params.yaml at its active scale: model,
rl and credit) on a small synthetic VisArith stream written to a temporary folder, samples one
batch of rollouts, then times the update of each row (forward pass with attention
probabilities, grounding scores where the row uses them, token advantages, loss, backward) on
that same batch, in rounds that visit the rows in turn so that machine noise hits each alike.
Prints each row's median time and its ratio to its base algorithm's (the abstract: HiCCR adds
under 3 %). The study's claim counts operations instead, which are exact
(`reprolab.core.operations`); this is the wall-clock check.

    python benchmarks/hiccr_overhead.py [--repeat 200] [--threads 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

import torch

from reprolab.core.params import load_yaml, study_params
from reprolab.models.tiny_vlm import build_tokenizer
from reprolab.preprocess.instr.stream import load_stream
from reprolab.preprocess.instr.visarith import VisArithSpec, build_visarith, vocabulary
from reprolab.studies.hiccr.data import load_visarith
from reprolab.studies.hiccr.jobs import build_policy, first_rollouts, rl_settings
from reprolab.studies.hiccr.rows import BASELINE_OF, ROWS
from reprolab.studies.hiccr.train import update_loss

STREAM = {
    "seed": 0,
    "noise": 20.0,
    "stroke_gain": [0.6, 1.0],
    "tasks": [{"name": "sft", "train": 8, "test": 4}, {"name": "rl", "train": 64, "test": 4}],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="timed updates per row")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    params = study_params(load_yaml("params.yaml"), "hiccr")
    spec = VisArithSpec.from_params(STREAM)
    with tempfile.TemporaryDirectory() as folder:
        data = load_visarith(load_stream(build_visarith(spec, Path(folder))))
    tokenizer = build_tokenizer(vocabulary(spec))
    policy, _ = build_policy(params["model"], tokenizer, int(data.rl.pixels.shape[-1]), 0)
    settings = rl_settings(params)
    prompts = int(params["rl"]["prompts"])
    policy, rollouts = first_rollouts(policy, tokenizer, settings, data.rl, prompts, 0)
    # Rewards of a random model are all 0; alternate them so every group has an advantage.
    rollouts = dataclasses.replace(
        rollouts, rewards=(torch.arange(len(rollouts.rewards)) % 2).float()
    )
    rows = sorted({*BASELINE_OF, *BASELINE_OF.values()}, key=list(ROWS).index)
    times: dict[str, list[float]] = {row: [] for row in rows}
    noise = torch.Generator().manual_seed(1)
    for _ in range(args.repeat):
        for row in rows:
            start = time.perf_counter()
            update_loss(policy, ROWS[row], settings, rollouts, noise).backward()
            times[row].append(time.perf_counter() - start)
            policy.model.zero_grad(set_to_none=True)
    print(
        f"{len(rollouts.rewards)} rollouts of {rollouts.responses.shape[1]} tokens, "
        f"{args.repeat} updates per row, {args.threads} thread(s)"
    )
    for row in rows:
        median = statistics.median(times[row])
        base = statistics.median(times[ROWS[row].base])
        print(f"{row:>14}: {1e3 * median:7.2f} ms   ratio to {ROWS[row].base}: {median / base:.3f}")


if __name__ == "__main__":
    main()
