"""bidrive's run job: train every planner of one seed, plan every test scene with every row,
score the plans.

A seed fixes its training and test scenes (`scenes.generate_scenes`, seeded per split). The job
trains, each at the learning rate its tuning record selected and on the same batch stream of
expert plans: the autoregressive-flow teacher, the coupling-flow student by maximum likelihood
(Student-MLE), the flow-matching planner and the regression MLP; then distils the teacher into a
copy of the MLE student (bidirectional: data NLL, forward KL on cached teacher samples,
reverse KL through the teacher's one-pass density; `distillation`). Every row then plans the
test scenes: constant velocity and MLP-L2 one plan each; the sampling rows draw
`selection.samples` plans per scene at temperature `selection.temperature` and select one —
by the model's exact likelihood (ML) or, for flow matching and the heuristic ablation, the
sample closest to the samples' mean; BiDrive+LO optimises the `latent_optimization.top` most
likely latents of the distilled student under the differentiable safety and dynamics costs and
keeps the one of lowest cost. Plans are scored by the synthetic PDMS (`pdms`), against the
expert (ADE, minADE over the samples) and, for the flows, by the NLL of the expert plan.

Choices: `passes` counts the sequential network evaluations a row needs per plan, from the
architecture (the teacher's MADE passes: blocks × 16 coordinates; the student's couplings; the
flow-matching steps; latent optimisation's forward and backward passes): a deterministic
measure of speed. Wall-clock plans/s depend on the machine and are measured by
`benchmarks/bidrive_latency.py` (ratios in one process), never written to metrics.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.io import write_h5, write_json
from reprolab.core.tuning import selected
from reprolab.models.draws import anchor, integers
from reprolab.models.training import fit
from reprolab.studies.bidrive.distillation import TeacherSampleCache, distillation_loss, freeze
from reprolab.studies.bidrive.latent_optimization import (
    CostWeights,
    PlanningContext,
    optimise_latents,
)
from reprolab.studies.bidrive.navsim import navsim_split
from reprolab.studies.bidrive.pdms import (
    N_WAYPOINTS,
    SUB_SCORES,
    ade,
    min_ade,
    pdm_score,
    scene_reference_progress,
)
from reprolab.studies.bidrive.planners import (
    ARTeacher,
    CouplingStudent,
    FlowMatchingPlanner,
    FlowPlanner,
    RegressionPlanner,
    constant_velocity_plan,
    select_closest_to_mean,
    select_max_likelihood,
)
from reprolab.studies.bidrive.scenes import KINDS, Scenes, generate_scenes
from reprolab.studies.bidrive.workflow_io import TRAINED, check_model, check_params, row_names

LOG = logging.getLogger(__name__)
STUDY = "bidrive"
PLAN_COORDINATES = 2 * N_WAYPOINTS


def seeded(seed: int, *parts: object) -> torch.Generator:
    """A CPU torch generator seeded from (seed, study, parts)."""
    return torch.Generator().manual_seed(derive_seed(seed, STUDY, *parts))


def scene_set(params: dict[str, Any], seed: int, split: str) -> Scenes:
    """The `split` ("train", "test" or "validation") scenes of `seed` (params `scenes`):
    generated when `scenes.source` is synthetic, read from the NAVSIM logs of `scenes.navsim`
    (the same for every seed) when it is navsim."""
    spec = params["scenes"]
    if spec["source"] == "navsim":
        return navsim_split(spec["navsim"], split)
    return generate_scenes(
        int(spec[split]),
        derive_seed(seed, STUDY, "scenes", split),
        mix=tuple(spec["mix"]),
        lanes=tuple(spec["lanes"]),
        max_curvature=float(spec["max_curvature"]),
        curved_fraction=float(spec["curved_fraction"]),
        speed_range=tuple(spec["speed_range"]),
        other_agent_rate=float(spec["other_agent_rate"]),
        lead_middle_lane=float(spec["lead_middle_lane"]),
    )


def as_tensor(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A float32 tensor of `array` on `device`."""
    return torch.as_tensor(np.asarray(array), dtype=torch.float32).to(device)


class TrainingSet:
    """The training scenes as tensors, with a seeded batch stream of row indices."""

    def __init__(self, scenes: Scenes, device: torch.device) -> None:
        self.scenes = scenes
        self.ctx = as_tensor(scenes.ctx, device)
        self.expert = as_tensor(scenes.expert, device)

    def rows(self, generator: torch.Generator, batch: int) -> torch.Tensor:
        """`batch` training rows drawn uniformly with replacement."""
        return integers(0, len(self.scenes), (batch,), generator, self.ctx)


def build_model(params: dict[str, Any], model: str) -> torch.nn.Module:
    """An untrained planner of params `models.<model>` (encoders of `models.encoder_hidden`)."""
    check_model(model)
    spec, encoder = params["models"][model], tuple(params["models"]["encoder_hidden"])
    hidden = tuple(int(h) for h in spec["hidden"])
    if model == "teacher":
        return ARTeacher(
            int(spec["blocks"]), hidden, encoder_hidden=encoder, element=spec["element"]
        )
    if model == "student":
        return CouplingStudent(
            int(spec["couplings"]), hidden, encoder_hidden=encoder, element=spec["element"]
        )
    if model == "fm":
        return FlowMatchingPlanner(hidden, encoder_hidden=encoder)
    return RegressionPlanner(hidden, encoder_hidden=encoder)


def model_loss(model: torch.nn.Module, name: str, plans, ctx, generator) -> torch.Tensor:
    """The training loss of a planner on a batch: NLL per plan (flows), the flow-matching or
    the regression loss."""
    if name in ("teacher", "student"):
        return -model.log_prob(plans, ctx).mean()
    if name == "fm":
        return model.loss(plans, ctx, generator)
    return model.loss(plans, ctx)


def train_model(
    params: dict[str, Any],
    name: str,
    data: TrainingSet,
    lr: float,
    seed: int,
    device: torch.device,
) -> tuple[torch.nn.Module, list[float]]:
    """Planner `name` trained for train.steps at `lr`: standardisation fitted on the training
    set, batches from the seed's stream (the same for every model of the seed)."""
    model = build_model(params, name)
    model.fit_standardisation(data.scenes.ctx, data.scenes.expert)
    model.to(device)
    rows, noise = seeded(seed, "batches"), seeded(seed, name, "train")
    batch = int(params["train"]["batch"])

    def loss() -> torch.Tensor:
        index = data.rows(rows, batch)
        return model_loss(model, name, data.expert[index], data.ctx[index], noise)

    curve = fit(
        list(model.parameters()),
        loss,
        int(params["train"]["steps"]),
        lr,
        name,
        int(params["train"]["log_every"]),
    )
    return model.eval(), curve


def distil(
    params: dict[str, Any],
    teacher: FlowPlanner,
    student: FlowPlanner,
    data: TrainingSet,
    lr: float,
    seed: int,
) -> tuple[FlowPlanner, list[float]]:
    """A copy of the MLE student distilled from the frozen teacher (params `distillation`)."""
    spec = params["distillation"]
    distilled = copy.deepcopy(student).train()
    frozen = freeze(copy.deepcopy(teacher))
    cache = TeacherSampleCache(
        frozen,
        data.ctx,
        int(spec["per_scene"]),
        int(spec["refresh"]),
        derive_seed(seed, STUDY, "teacher samples"),
    )
    rows, noise = seeded(seed, "distillation batches"), seeded(seed, "distillation")
    batch, step = int(params["train"]["batch"]), [0]

    def loss() -> torch.Tensor:
        index = data.rows(rows, batch)
        total, _ = distillation_loss(
            distilled,
            frozen,
            data.expert[index],
            data.ctx[index],
            cache.samples(step[0], index),
            noise,
            float(spec["alpha_data"]),
            float(spec["alpha_forward"]),
            float(spec["alpha_reverse"]),
            int(spec["reverse_samples"]),
        )
        step[0] += 1
        return total

    curve = fit(
        list(distilled.parameters()),
        loss,
        int(spec["steps"]),
        lr,
        "distillation",
        int(params["train"]["log_every"]),
    )
    return distilled.eval(), curve


def passes(params: dict[str, Any], key: str) -> int:
    """Sequential network evaluations per plan of a row (module docstring)."""
    models, lo = params["models"], params["latent_optimization"]
    student = int(models["student"]["couplings"])
    return {
        "const_vel": 0,
        "mlp": 1,
        "fm": int(models["fm"]["steps"]),
        "teacher": int(models["teacher"]["blocks"]) * PLAN_COORDINATES,
        "student": student,
        "distilled_heuristic": student,
        "distilled": student,
        "lo": student * (1 + 2 * int(lo["steps"])),
    }[key]


class Planned:
    """Rows' plans for one scene set: the selected plan [S, 8, 2] per row and, for the sampling
    rows, their samples [S, n, 8, 2]."""

    def __init__(self) -> None:
        self.selected: dict[str, np.ndarray] = {}
        self.samples: dict[str, np.ndarray] = {}


FLOW_ROWS = {"teacher": "teacher", "student": "student", "distilled": "distilled"}
"""The ML-selection rows and the model each samples."""


def plan_scenes(
    params: dict[str, Any],
    models: dict[str, torch.nn.Module],
    scenes: Scenes,
    seed: int,
    rows: Sequence[str],
) -> Planned:
    """The plans of `rows` (keys of workflow_io.ROWS) on `scenes` with the trained `models`
    (keys: TRAINED and "distilled"); the heuristic and LO rows reuse the distilled student's
    samples."""
    selection = params["selection"]
    n, temperature = int(selection["samples"]), float(selection["temperature"])
    device = anchor(next(iter(models.values()))).device
    ctx = as_tensor(scenes.ctx, device)
    out = Planned()
    with torch.no_grad():
        if "const_vel" in rows:
            out.selected["const_vel"] = np.asarray(constant_velocity_plan(scenes.ego_speed))
        if "mlp" in rows:
            out.selected["mlp"] = models["mlp"](ctx).cpu().numpy()
        if "fm" in rows:
            steps = int(params["models"]["fm"]["steps"])
            plans = models["fm"].sample(ctx, n, seeded(seed, "fm", "plan"), steps)
            out.samples["fm"] = plans.cpu().numpy()
            out.selected["fm"] = select_closest_to_mean(plans).cpu().numpy()
        draws = {}
        for key, model in FLOW_ROWS.items():
            needed = {key, "distilled_heuristic", "lo"} if key == "distilled" else {key}
            if not needed & set(rows):
                continue
            draws[key] = models[model].sample(ctx, n, seeded(seed, key, "plan"), temperature)
            out.samples[key] = draws[key].plans.cpu().numpy()
            best = select_max_likelihood(draws[key].plans, draws[key].log_prob)
            out.selected[key] = best.cpu().numpy()
        if "distilled_heuristic" in rows:
            heuristic = select_closest_to_mean(draws["distilled"].plans)
            out.selected["distilled_heuristic"] = heuristic.cpu().numpy()
    if "lo" in rows:
        out.selected["lo"] = optimised_plans(
            params, models["distilled"], draws["distilled"], scenes
        )
    return out


def cost_weights(spec: dict[str, Any]) -> CostWeights:
    """The latent optimisation's cost weights from params `latent_optimization`."""
    weights = spec["weights"]
    return CostWeights(
        likelihood=float(weights["likelihood"]),
        collision=float(weights["collision"]),
        drivable=float(weights["drivable"]),
        dynamics=float(weights["dynamics"]),
        r_safe=float(spec["r_safe"]),
        beta=float(spec["beta"]),
    )


def optimised_plans(
    params: dict[str, Any], student: FlowPlanner, drawn, scenes: Scenes
) -> np.ndarray:
    """BiDrive+LO: the `top` most likely of the student's sampled latents per scene, optimised
    under the costs of params `latent_optimization`; the lowest-cost plan per scene."""
    spec = params["latent_optimization"]
    top = int(spec["top"])
    order = drawn.log_prob.argsort(dim=1, descending=True, stable=True)[:, :top]
    z0 = torch.gather(drawn.latents, 1, order[..., None].expand(-1, -1, drawn.latents.shape[-1]))
    ctx = as_tensor(scenes.ctx, z0.device)
    costs = cost_weights(spec)
    planning = PlanningContext.from_scenes(scenes, device=z0.device)
    student.requires_grad_(False)
    plans, _, _ = optimise_latents(
        lambda z: student.decode(z, ctx),
        z0,
        planning,
        steps=int(spec["steps"]),
        lr=float(spec["lr"]),
        weights=costs,
    )
    return plans.detach().cpu().numpy()


def row_scores(
    params: dict[str, Any],
    key: str,
    planned: Planned,
    scenes: Scenes,
    reference: np.ndarray,
    nll: float | None,
) -> dict[str, Any]:
    """One row's measures on a scene set: the mean sub-scores and PDMS, the collision rate
    (scenes with NC < 1), ADE of the selected plan and minADE over its samples (the selected
    plan alone for single-plan rows) to the expert, the NLL of the expert plans (flows), the
    network passes per plan, and the mean PDMS per scene kind."""
    plans = planned.selected[key]
    result = pdm_score(
        plans, scenes.ego_speed, scenes.road, scenes.agents, scenes.agents_future, reference
    )
    columns = result.columns()
    samples = planned.samples.get("distilled" if key in ("distilled_heuristic", "lo") else key)
    out = {name: float(np.mean(columns[name])) for name in SUB_SCORES}
    out["PDMS"] = float(np.mean(result.score))
    out["collision_rate"] = float(np.mean(result.nc < 1.0))
    out["ade"] = float(np.mean(ade(plans, scenes.expert)))
    out["min_ade"] = float(
        np.mean(min_ade(plans[:, None] if samples is None else samples, scenes.expert))
    )
    out["expert_nll"] = nll
    out["passes"] = passes(params, key)
    out["pdms_by_kind"] = {
        kind: float(np.mean(result.score[scenes.kind == k])) if np.any(scenes.kind == k) else None
        for k, kind in enumerate(KINDS)
    }
    return out


def expert_nll(model: FlowPlanner, scenes: Scenes) -> float:
    """The mean NLL (nats per plan, in metres) of the scenes' expert plans."""
    device = anchor(model).device
    with torch.no_grad():
        log_p = model.log_prob(as_tensor(scenes.expert, device), as_tensor(scenes.ctx, device))
    return float(-log_p.mean())


def train_all(
    params: dict[str, Any],
    tuned: dict[str, dict[str, Any]],
    data: TrainingSet,
    seed: int,
    device: torch.device,
) -> tuple[dict[str, torch.nn.Module], dict[str, list[float]]]:
    """Every trained model of a seed (and the distilled student) with its loss curve."""
    models, curves = {}, {}
    for name in TRAINED:
        models[name], curves[name] = train_model(
            params, name, data, float(tuned[name]["lr"]), seed, device
        )
    models["distilled"], curves["distilled"] = distil(
        params, models["teacher"], models["student"], data, float(tuned["distilled"]["lr"]), seed
    )
    return models, curves


def run_job(
    params: dict[str, Any],
    tuning_files: list[str],
    seed: int,
    out_dir: str | Path,
    threads: int,
) -> None:
    """Train every planner of `seed`, plan and score the test scenes with every row; write
    metrics.json, plans.h5 (the first `plot_scenes` test scenes: `plans` [rows, S, 8, 2] in
    table order, the distilled student's `samples`, the expert and the scene arrays) and
    curves.h5 in out_dir."""
    check_params(params)
    seed_everything(derive_seed(seed, STUDY), threads)
    device = resolve_device(str(params["device"]))
    tuned = selected(tuning_files)
    data = TrainingSet(scene_set(params, seed, "train"), device)
    models, curves = train_all(params, tuned, data, seed, device)
    test = scene_set(params, seed, "test")
    names = row_names(params)
    planned = plan_scenes(params, models, test, seed, list(names))
    reference = scene_reference_progress(test)
    nll = {key: expert_nll(models[m], test) for key, m in FLOW_ROWS.items()}
    nll["distilled_heuristic"] = nll["lo"] = nll["distilled"]
    rows = {
        names[key]: row_scores(params, key, planned, test, reference, nll.get(key)) for key in names
    }
    out = Path(out_dir)
    write_json(
        out / "metrics.json",
        {
            "seed": seed,
            "hyperparameters": tuned,
            "rows": rows,
            "scene_kinds": {kind: int(np.sum(test.kind == k)) for k, kind in enumerate(KINDS)},
        },
    )
    shown = int(params["evaluation"]["plot_scenes"])
    scene = test.subset(slice(0, shown))
    write_h5(
        out / "plans.h5",
        {
            "plans": np.stack([planned.selected[key][:shown] for key in names]),
            "samples": planned.samples["distilled"][:shown],
            "expert": scene.expert,
            "road": scene.road,
            "agents": scene.agents,
            "agents_future": scene.agents_future,
            "kind": scene.kind.astype(np.int64),
        },
    )
    write_h5(out / "curves.h5", {k: np.asarray(v, dtype=float) for k, v in curves.items()})
