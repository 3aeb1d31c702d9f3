"""ntm's jobs: train every method of one (dataset, seed) and measure its samples.

A run job trains, on the same training set and the same batch stream (both fixed by the seed):
the flow-matching velocity net (sampled by Euler at the reference step count and at K steps),
its consistency distillation (K-step multistep sampling), the Gaussian-step trajectory model
(Gauss-K) and the normalizing trajectory model (NTM-K), then self-distils NTM's last step (a
denoiser trained on NTM's own samples and its Tweedie estimates). Each method runs at the
learning rate its tuning record selected. Every row's samples are scored against the seed's
fixed test set: sliced Wasserstein, MMD, and the dataset's mode or support shares; the
trajectory models also get their exact trajectory NLL on forward trajectories of the test
set, and NTM a check of its log-determinants against autograd Jacobians.

Choices: the rows' names carry K (the forward chain's steps, params `times`), so a params
change renames them; NTM-K outputs x_{t_0}/(1 − t₀), the free rescale that undoes the noise
augmentation's shrink, so that self-distillation must earn its gain by denoising; NFE counts
network passes: K for every few-step row, the reference's step count, K + 1 for the denoiser,
K + 2·draws for the Tweedie estimate (a forward and a backward pass per draw).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

import torch

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.io import write_h5, write_json
from reprolab.core.tuning import selected
from reprolab.models.draws import anchor
from reprolab.models.flows.base import jacobian_log_det
from reprolab.studies.ntm.data import DatasetSampler, dataset_sampler, eight_gaussian_modes
from reprolab.studies.ntm.flow_matching import consistency_sample, euler_sample
from reprolab.studies.ntm.metrics import (
    mmd_rbf,
    mode_coverage,
    near_mode_share,
    projection_bank,
    sliced_wasserstein,
    support_share,
)
from reprolab.studies.ntm.self_distillation import tweedie_denoise
from reprolab.studies.ntm.training import (
    build_trajectory_model,
    train_consistency,
    train_denoiser,
    train_flow_matching,
    train_trajectory_model,
)
from reprolab.studies.ntm.trajectory_model import TrajectoryModel
from reprolab.studies.ntm.workflow_io import check_params, row_names

LOG = logging.getLogger(__name__)
STUDY = "ntm"


def seeded(seed: int, *parts: object) -> torch.Generator:
    """A torch generator seeded from (seed, study, parts)."""
    return torch.Generator().manual_seed(derive_seed(seed, STUDY, *parts))


def load_dataset(params: dict[str, Any], dataset: str, seed: int) -> DatasetSampler:
    """The dataset of params `datasets.<dataset>` drawn (or split) for `seed`."""
    return dataset_sampler(params["datasets"][dataset], seeded(seed, dataset, "data"))


def batch_stream(sampler: DatasetSampler, seed: int, dataset: str, device: torch.device):
    """A draw of flat training batches on `device` whose stream is fixed by (seed, dataset):
    every method that takes a new stream sees the same batches."""
    own = dataclasses.replace(sampler, generator=seeded(seed, dataset, "batches"))
    return lambda n: own.train_batch(n).reshape(n, -1).to(device)


def dimension(sampler: DatasetSampler) -> int:
    """The flat dimension D of one sample."""
    return int(torch.Size(sampler.sample_shape).numel())


def trajectory_nll(model: TrajectoryModel, x0: torch.Tensor, generator: torch.Generator) -> float:
    """The exact trajectory NLL −log p_θ(x_{t_0:t_K}) in nats per dimension of the trajectory
    ((K + 1)·D), averaged over forward trajectories of x0."""
    with torch.no_grad():
        states = model.chain.trajectory(x0.to(anchor(model).device), generator)
        log_p = model.trajectory_log_prob(states)
    return float(-log_p.mean() / (len(states) * model.dim))


def log_det_error(model: TrajectoryModel, x0: torch.Tensor, generator: torch.Generator) -> float:
    """The largest |log|det ∂T_k/∂x| from the flow − the log|det| of autograd's Jacobian| over
    forward trajectories of the rows of x0 and the steps k, in float64 on the CPU: the check
    that the trajectory NLL is exact."""
    model64 = copy.deepcopy(model).double().cpu()
    states = model64.chain.trajectory(x0.double().cpu(), generator)
    with torch.no_grad():
        contexts = model64.predictor(torch.stack(states[1:], 1))
    worst = 0.0
    for k in range(1, model64.chain.steps + 1):
        transport, before, context = model64.transporters[k - 1], states[k - 1], contexts[:, k - 1]
        with torch.no_grad():
            own = transport(before, context)[1]
        brute = jacobian_log_det(transport, before, context)
        worst = max(worst, float((own - brute).abs().max()))
    return worst


def sample_quality(run: RunContext, samples: torch.Tensor) -> dict[str, float | None]:
    """SWD, MMD and the dataset's shares of `samples` (run.samples rows, any device) against
    the run's test set; None where a share does not apply (modes off 8gauss, support on
    images)."""
    params, spec, test = run.params, run.spec, run.test
    samples = samples.detach().cpu()
    evaluation = params["evaluation"]
    n_mmd = int(evaluation["mmd_samples"])
    bank = projection_bank(test.shape[1], int(evaluation["projections"]), seed=0)
    quality: dict[str, float | None] = {
        "swd": sliced_wasserstein(samples, test[: len(samples)], bank),
        "mmd": mmd_rbf(samples[:n_mmd], test[:n_mmd], list(evaluation["mmd_bandwidths"])),
        "modes_covered": None,
        "in_support": None,
    }
    if spec["kind"] == "8gauss":
        modes = eight_gaussian_modes(float(spec.get("radius", 4.0)))
        radius = float(evaluation["mode_radius_stds"]) * float(spec.get("std", 0.15))
        quality["modes_covered"] = mode_coverage(
            samples, modes, radius, float(evaluation["min_mode_share"])
        )
        quality["in_support"] = near_mode_share(samples, modes, radius)
    elif spec["kind"] == "checker":
        quality["in_support"] = support_share(
            samples, int(spec.get("cells", 4)), float(spec.get("half_width", 4.0))
        )
    return quality


class RunContext:
    """What every method of one (dataset, seed) shares: params, the data, its dimension."""

    def __init__(self, params: dict[str, Any], dataset: str, seed: int) -> None:
        self.params, self.dataset, self.seed = params, dataset, seed
        self.spec = dict(params["datasets"][dataset])
        self.sampler = load_dataset(params, dataset, seed)
        self.dim = dimension(self.sampler)
        self.device = resolve_device(str(params["device"]))
        self.test = self.sampler.test.reshape(len(self.sampler.test), -1)
        self.samples = min(int(params["evaluation"]["samples"]), len(self.test))

    def batches(self):
        """A fresh copy of the seed's batch stream (the same batches for every method)."""
        return batch_stream(self.sampler, self.seed, self.dataset, self.device)

    def generator(self, *purpose: object) -> torch.Generator:
        """The generator of one purpose (a method's training noise, its sampling)."""
        return seeded(self.seed, self.dataset, *purpose)


def train_fm(run: RunContext, lr: float):
    """The flow-matching velocity net and its loss curve, trained for budget.fm_steps."""
    p = run.params
    budget = {**p["budget"], "steps": p["budget"]["fm_steps"]}
    return train_flow_matching(
        run.batches(), run.dim, p["net"], budget, lr, run.generator("fm", "train"), run.device
    )


def train_cd(run: RunContext, teacher, lr: float):
    """The consistency student of `teacher` and its loss curve."""
    p = run.params
    return train_consistency(
        run.batches(),
        teacher,
        p["budget"],
        lr,
        float(p["consistency"]["ema"]),
        int(p["consistency"]["grid_points"]),
        run.generator("cd", "train"),
    )


def train_trajectory(run: RunContext, method: str, lr: float):
    """Gauss-K ("gauss": identity transporter) or NTM-K ("ntm": params `transporter`) and its
    loss curve."""
    p = run.params
    kind = "identity" if method == "gauss" else p["transporter"]
    model = build_trajectory_model(run.dim, p["times"], kind, p["net"]).to(run.device)
    curve = train_trajectory_model(
        run.batches(), model, p["budget"], lr, run.generator(method, "train"), method
    )
    return model, curve


def few_step_samples(run: RunContext, method: str, model) -> torch.Tensor:
    """run.samples samples of a trained few-step method ("fm": Euler at K steps, "cd", "gauss",
    "ntm": rescaled x_{t_0}), the quantity the method is tuned on."""
    n, steps = run.samples, len(run.params["times"]) - 1
    generator = run.generator(method, "sample")
    if method == "fm":
        return euler_sample(model, n, run.dim, steps, generator)
    if method == "cd":
        return consistency_sample(model, n, run.dim, cd_times(run.params), generator)
    if method == "ntm":
        return rescaled(model, ntm_start(run, model))
    return model.sample(n, generator)[0]


def ntm_start(run: RunContext, model: TrajectoryModel) -> torch.Tensor:
    """run.samples of NTM's x_{t_0} (its reverse chain's last state)."""
    return model.sample(run.samples, run.generator("ntm", "sample"))[0]


def rescaled(model: TrajectoryModel, start: torch.Tensor) -> torch.Tensor:
    """x_{t_0}/(1 − t₀): NTM-K's output (module docstring)."""
    return start / (1.0 - model.chain.times[0])


def cd_times(params: dict[str, Any]) -> list[float]:
    """The multistep consistency sampler's times: the forward grid's t_K … t_1 (1 first)."""
    return [float(t) for t in reversed(params["times"][1:])]


def run_job(
    params: dict[str, Any],
    tuning_files: list[str],
    dataset: str,
    seed: int,
    out_dir: str | Path,
    threads: int,
) -> None:
    """Train and score every row of the table for (dataset, seed); write metrics.json,
    samples.h5 (the first `plot_samples` samples of every row and of the test set) and
    curves.h5 (loss curves) in out_dir."""
    check_params(params)
    seed_everything(derive_seed(seed, STUDY, dataset), threads)
    tuned = selected(tuning_files)
    run = RunContext(params, dataset, seed)
    names = row_names(params)
    start = time.perf_counter()
    fm, fm_curve = train_fm(run, float(tuned["fm"]["lr"]))
    cd, cd_curve = train_cd(run, fm, float(tuned["cd"]["lr"]))
    gauss, gauss_curve = train_trajectory(run, "gauss", float(tuned["gauss"]["lr"]))
    ntm, ntm_curve = train_trajectory(run, "ntm", float(tuned["ntm"]["lr"]))
    samples = {
        names["reference"]: euler_sample(
            fm,
            run.samples,
            run.dim,
            int(params["reference_steps"]),
            run.generator("reference", "sample"),
        ),
        **{
            names[m]: few_step_samples(run, m, model)
            for m, model in (("fm", fm), ("gauss", gauss), ("cd", cd))
        },
    }
    x_t0 = ntm_start(run, ntm)
    samples[names["ntm"]] = rescaled(ntm, x_t0)
    distilled = self_distil(run, ntm, x_t0)
    samples[names["tweedie"]] = distilled["tweedie"]
    samples[names["sd"]] = distilled["sd"]
    LOG.info("trained and sampled in %.1f s", time.perf_counter() - start)
    rows = {}
    for key, name in names.items():
        rows[name] = {"method": key, "nfe": nfe(params, key)}
        rows[name].update(sample_quality(run, samples[name]))
    test = run.test
    nll_rows = test[: int(params["evaluation"]["nll_samples"])]
    for key, model in (("gauss", gauss), ("ntm", ntm)):
        rows[names[key]]["trajectory_nll"] = trajectory_nll(model, nll_rows, run.generator("nll"))
    exactness = log_det_error(
        ntm, test[: int(params["evaluation"]["exactness_rows"])], run.generator("exactness")
    )
    out = Path(out_dir)
    write_json(
        out / "metrics.json",
        {
            "dataset": dataset,
            "seed": seed,
            "dim": run.dim,
            "hyperparameters": tuned,
            "rows": rows,
            "log_det_error": exactness,
        },
    )
    shown = int(params["evaluation"]["plot_samples"])
    write_h5(
        out / "samples.h5",
        {
            **{name: x[:shown].detach().cpu().numpy() for name, x in samples.items()},
            "test": test[:shown].numpy(),
        },
    )
    curves = {"fm": fm_curve, "cd": cd_curve, "gauss": gauss_curve, "ntm": ntm_curve}
    curves["sd"] = distilled["curve"]
    write_h5(out / "curves.h5", {k: torch.tensor(v).numpy() for k, v in curves.items()})


def self_distil(run: RunContext, ntm: TrajectoryModel, evaluation_start: torch.Tensor) -> dict:
    """NTM's self-distillation: a pool of its own samples at t₀ with their Tweedie estimates
    from its score, the denoiser trained on them; returns the Tweedie estimates and the
    denoiser's outputs for the evaluation samples `evaluation_start` (x_{t_0}) and the
    denoiser's loss curve."""
    p = run.params["distillation"]
    draws = int(p["draws"])
    pool = ntm.sample(int(p["pool"]), run.generator("sd", "pool"))[0]
    targets = tweedie_denoise(ntm, pool, draws, run.generator("sd", "score"))
    denoiser, curve = train_denoiser(
        pool,
        targets,
        ntm.chain.times[0],
        tuple(int(h) for h in p["hidden"]),
        p,
        float(p["lr"]),
        run.generator("sd", "train"),
    )
    with torch.no_grad():
        sd = denoiser(evaluation_start)
    tweedie = tweedie_denoise(ntm, evaluation_start, draws, run.generator("tweedie"))
    return {"tweedie": tweedie, "sd": sd, "curve": curve}


def nfe(params: dict[str, Any], key: str) -> int:
    """Network function evaluations per sample of a row (see the module docstring)."""
    steps = len(params["times"]) - 1
    return {
        "reference": int(params["reference_steps"]),
        "tweedie": steps + 2 * int(params["distillation"]["draws"]),
        "sd": steps + 1,
    }.get(key, steps)
