"""Plans per second at batch 1 of bidrive's planners, as ratios to the autoregressive teacher.

In one process, alternating so that machine noise hits every planner alike, one scene's plan
(`--samples` candidates, then the row's selection) by: the autoregressive-flow teacher (ML
selection: sequential MADE passes), the coupling-flow student (ML selection: one pass), the
student with latent optimisation, and flow matching with the mean heuristic (Euler steps). The
planners have the sizes of params.yaml's bidrive section at `--scale` (candidates, temperature,
Euler steps and latent-optimisation settings too) with untrained weights (speed does not depend
on training), one thread. The study's table reports the deterministic count of sequential network
passes instead; this measures what they cost here.

    python benchmarks/bidrive_latency.py [--scale smoke] [--repeat 5] [--plans 50]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import fields

import torch

from reprolab.core.params import load_yaml, study_params
from reprolab.studies.bidrive.jobs import build_model, cost_weights
from reprolab.studies.bidrive.latent_optimization import PlanningContext, optimise_latents
from reprolab.studies.bidrive.planners import select_closest_to_mean, select_max_likelihood
from reprolab.studies.bidrive.scenes import generate_scenes


def per_plan(work: Callable[[int], object], plans: int) -> float:
    """Seconds per plan of `work(i)` over `plans` scenes (after one warm-up call)."""
    work(0)
    start = time.perf_counter()
    for i in range(plans):
        work(i)
    return (time.perf_counter() - start) / plans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds of alternation")
    parser.add_argument("--plans", type=int, default=50, help="scenes planned per timing")
    parser.add_argument("--scale", default="smoke", help="params.yaml scale of the sizes")
    args = parser.parse_args()
    params = study_params({**load_yaml("params.yaml"), "scale": args.scale}, "bidrive")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    scenes = generate_scenes(max(args.plans, 8), seed=0)
    ctx = torch.tensor(scenes.ctx, dtype=torch.float32)
    planning = PlanningContext.from_scenes(scenes)
    teacher, student, fm = (
        build_model(params, name).fit_standardisation(scenes.ctx, scenes.expert).eval()
        for name in ("teacher", "student", "fm")
    )
    student.requires_grad_(False)
    selection, lo = params["selection"], params["latent_optimization"]
    n, temperature = int(selection["samples"]), float(selection["temperature"])
    weights = cost_weights(lo)
    euler_steps, generator = int(params["models"]["fm"]["steps"]), torch.Generator().manual_seed(1)

    def flow_plan(model):
        def work(i: int) -> object:
            with torch.no_grad():
                drawn = model.sample(ctx[i : i + 1], n, generator, temperature)
            return select_max_likelihood(drawn.plans, drawn.log_prob)

        return work

    def optimised(i: int) -> object:
        with torch.no_grad():
            drawn = student.sample(ctx[i : i + 1], n, generator, temperature)
        top = drawn.log_prob.argsort(dim=1, descending=True)[:, : int(lo["top"])]
        z0 = torch.gather(drawn.latents, 1, top[..., None].expand(-1, -1, 16))
        scene = ctx[i : i + 1]
        one = PlanningContext(*(getattr(planning, f.name)[i : i + 1] for f in fields(planning)))
        return optimise_latents(
            lambda z: student.decode(z, scene), z0, one, int(lo["steps"]), float(lo["lr"]), weights
        )[0]

    def matched(i: int) -> object:
        with torch.no_grad():
            return select_closest_to_mean(fm.sample(ctx[i : i + 1], n, generator, euler_steps))

    planners = {
        "AR teacher + ML": flow_plan(teacher),
        "student + ML": flow_plan(student),
        "student + LO": optimised,
        f"FM-{euler_steps} + heuristic": matched,
    }
    seconds: dict[str, list[float]] = {name: [] for name in planners}
    for _ in range(args.repeat):
        for name, work in planners.items():
            seconds[name].append(per_plan(work, args.plans))
    teacher_time = statistics.median(seconds["AR teacher + ML"])
    print(
        f"plans/s at batch 1 ({args.scale} sizes, {n} candidates per plan, one thread), "
        f"median of {args.repeat}:"
    )
    for name, times in seconds.items():
        median = statistics.median(times)
        print(
            f"  {name:20s} {1 / median:8.1f} plans/s   speed-up over the teacher "
            f"{teacher_time / median:5.2f}x   (rounds: "
            + ", ".join(f"{teacher_time / t:.2f}" for t in times)
            + ")"
        )


if __name__ == "__main__":
    main()
