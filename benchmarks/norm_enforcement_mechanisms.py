"""Time of one norm_enforcement episode per mechanism, as ratios to the same episode under None.

In one process, alternating so that machine noise hits every mechanism alike, each mechanism
plays the same smoke episode (the main population, the base fine at the middle of the tuning
grid) in each environment: the ratio is what enforcing costs in simulation time, the robust
mechanism's two grid posteriors included. The study's table reports enforcement cost in payoff
units instead; this measures the machinery.

    python benchmarks/norm_enforcement_mechanisms.py [--scale smoke] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from reprolab.core.params import load_yaml, study_params
from reprolab.studies.norm_enforcement.jobs import play
from reprolab.studies.norm_enforcement.mechanisms import EnforcementParams


def episode_seconds(params: dict, environment: str, mechanism: str, fine: float) -> float:
    """Wall time of one episode (seed 0)."""
    enforcement = EnforcementParams.from_params(params["enforcement"], fine)
    start = time.perf_counter()
    play(params, environment, mechanism, enforcement, params["population"], 0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds of alternation")
    parser.add_argument("--scale", default="smoke", help="params.yaml scale of the episodes")
    args = parser.parse_args()
    params = study_params({**load_yaml("params.yaml"), "scale": args.scale}, "norm_enforcement")
    grid = params["tune"]["grid"]["fine"]
    fine = grid[len(grid) // 2]
    print(f"{params['rounds']} rounds, {sum(params['population'].values())} agents, fine {fine}")
    for environment in params["environments"]:
        times: dict[str, list[float]] = {m: [] for m in params["methods"]}
        for _ in range(args.repeat):
            for mechanism in params["methods"]:
                times[mechanism].append(episode_seconds(params, environment, mechanism, fine))
        base = statistics.median(times["none"]) if "none" in times else float("nan")
        for mechanism, values in times.items():
            seconds = statistics.median(values)
            print(
                f"{environment:>11} {mechanism:>22}: {seconds:6.3f} s (median of "
                f"{args.repeat}), {seconds / base:5.2f}x None"
            )


if __name__ == "__main__":
    main()
