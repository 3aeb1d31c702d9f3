"""What the normlift workflow jobs do: write a scene, and lift and score every method on one.

A scene job draws the synthetic scene of a seed (`dataset.make_scene` from
derive_seed(seed, "normlift", "scene")) and writes its HDF5 file. A run job reads one scene,
back-projects the lifting views once (`prepare`), lifts every listed method with its tuned
values (`lift`), and scores each: 3-D mIoU and mean class accuracy on the observed Gaussians
(`metrics.observed`), 2-D mIoU on the held-out views (each Gaussian's queried label rendered
with the held-out weights, scored on the pixels whose ground truth is not background), and
accuracy on the low-support Gaussians (N_eff < `low_support`) and the rest. It also records
the AUROC of each reliability score (W, r, ρ, the ablation ρ') for the closed form's label
being right, the sanity measures of the closed form and the decomposition, and accuracy per
reliability bin (the curves). metrics.json has the numbers; lifted.h5 the labels per method,
the held-out label maps and the per-Gaussian scores the report draws. Wall times go to the log
only (outputs are byte-identical across runs).

Methods (rows): `distill` (render-side L2 fitting, unconstrained features), `maxw` (the feature
of the max-weight pixel), `wavg` (weighted average b/W: the standard rule, same labels as the
closed form), `wavg_knn` (the normalised lift averaged linearly over k neighbours),
`normlift_raw` (mode voting weighted by the raw magnitude r), `normlift` (voting weighted by the
calibrated ρ), and the ablations `normlift_discount` (ρ' = r(1 − e^{−N_eff/2})),
`normlift_uniform` (every candidate votes 1) and `normlift_average` (the winning mode is
averaged, not copied). The ablations take NormLift's tuned values.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import write_h5, write_json
from reprolab.core.tuning import selected
from reprolab.studies.normlift import lifting as lf
from reprolab.studies.normlift.dataset import (
    Scene,
    held_out_views,
    lifting_views,
    make_scene,
    read_scene,
    select_views,
    write_scene,
)
from reprolab.studies.normlift.metrics import auroc, mean_accuracy, mean_iou, observed
from reprolab.studies.normlift.workflow_io import ABLATIONS, ROWS

STUDY = "normlift"
VOTING = {
    "normlift": ("rho", "reliability", False),
    "normlift_raw": ("r", "reliability", False),
    "normlift_discount": ("rho_discount", "reliability", False),
    "normlift_uniform": ("rho", "uniform", False),
    "normlift_average": ("rho", "reliability", True),
}
"""Voting rows: (which reliability orders and weighs the votes, vote weights, mode average)."""
METHODS = tuple(ROWS)


def write_scene_file(
    data: Mapping[str, Any], seed: int, out_path: str | Path, folder: str | None, threads: int
) -> None:
    """Write the scene of `seed` (tuning or evaluation) to `out_path`: drawn from
    derive_seed(seed, "normlift", "scene") when `data.source` (params `normlift.data`) is
    synthetic, read from the real scene `folder` (paper_scene) when it is `folder`. Only the
    data section is read, so a change to the methods or claims leaves the scenes as they are."""
    start = time.perf_counter()
    seed_everything(derive_seed(seed, STUDY, "scene"), threads)
    with threadpool_limits(limits=threads):
        if data["source"] == "folder":
            from reprolab.studies.normlift.paper_scene import scene_from_folder

            scene = scene_from_folder(folder, data["folder"])
        else:
            scene = make_scene(data, np.random.default_rng(derive_seed(seed, STUDY, "scene")))
        write_scene(out_path, scene)
    elapsed = time.perf_counter() - start
    size = f"{len(scene.gaussians.means)} Gaussians, {scene.weights.nnz} weights"
    print(f"scene seed {seed}: {size}, {elapsed:.1f} s")


@dataclass(frozen=True, eq=False)
class Prepared:
    """A scene with its lifting views back-projected once: what every method starts from."""

    scene: Scene
    lifting: lf.Weights
    held_out: lf.Weights
    back: lf.BackProjection
    unit: np.ndarray
    reliability: dict[str, np.ndarray]
    n_eff: np.ndarray
    observed: np.ndarray


def prepare(scene: Scene, observed_weight: float) -> Prepared:
    """Back-project the lifting views and compute every reliability score."""
    lifting = select_views(scene.weights, lifting_views(scene))
    back = lf.back_project(lifting, scene.features)
    r = lf.reliability(back)
    n_eff = lf.effective_support(back)
    return Prepared(
        scene=scene,
        lifting=lifting,
        held_out=select_views(scene.weights, held_out_views(scene)),
        back=back,
        unit=lf.normalise(back.b),
        reliability={
            "W": back.total,
            "r": r,
            "rho": lf.calibrated(r, n_eff),
            "rho_discount": lf.calibrated_ablation(r, n_eff),
        },
        n_eff=n_eff,
        observed=observed(lifting, observed_weight),
    )


def lift(method: str, settings: Mapping[str, Any], prep: Prepared, seed: int) -> np.ndarray:
    """The lifted features [G, D] of `method` with its settings (params section + tuned)."""
    centers = prep.scene.gaussians.means
    if method == "distill":
        rng_seed = derive_seed(seed, STUDY, "distill")
        return lf.distill(
            prep.lifting,
            prep.scene.features,
            int(settings["steps"]),
            float(settings["lr"]),
            rng_seed,
        )
    if method == "maxw":
        return lf.max_weight(prep.lifting, prep.scene.features)
    if method == "wavg":
        return lf.weighted_average(prep.back)
    if method == "wavg_knn":
        return lf.knn_average(prep.unit, centers, int(settings["k"]))
    if method in VOTING:
        score, votes, average = VOTING[method]
        return lf.mode_vote(
            prep.unit,
            prep.reliability[score],
            centers,
            k=int(settings["k"]),
            tau=float(settings["tau"]),
            tau_c=float(settings["tau_c"]),
            passes=int(settings["passes"]),
            votes=votes,
            mode_average=average,
        )
    raise ValueError(f"normlift: unknown method {method!r}; known: {', '.join(METHODS)}")


def settings_of(method: str, params: Mapping[str, Any], tuned: Mapping[str, Any]) -> dict:
    """A method's settings: its params section (an ablation: NormLift's) with its tuned values
    (an ablation: NormLift's) applied."""
    source = "normlift" if method in ABLATIONS else method
    return {**params.get(source, {}), **tuned.get(source, {})}


def work(method: str, settings: Mapping[str, Any], prep: Prepared) -> int:
    """Multiply-adds of lifting with `method`, a deterministic cost (wall times go to the log
    and the benchmark): the back-projection's nnz·D for every training-free row; plus G·k·D for
    kNN averaging; plus (k + 1)²·D per refined Gaussian and pass for voting (each candidate's
    cosines with the others); 2·nnz·D per step for distillation (rendering and its
    transpose)."""
    nnz, (gaussians, dim) = prep.lifting.nnz, prep.unit.shape
    if method == "distill":
        return 2 * int(settings["steps"]) * nnz * dim
    base = nnz * dim
    if method == "wavg_knn":
        return base + gaussians * int(settings["k"]) * dim
    if method in VOTING:
        score = prep.reliability[VOTING[method][0]]
        refined = int(np.sum(score < float(settings["tau"]))) * int(settings["passes"])
        return base + refined * (int(settings["k"]) + 1) ** 2 * dim
    return base


def miou_3d(labels: np.ndarray, prep: Prepared) -> float:
    """3-D mIoU of Gaussian labels on the observed Gaussians."""
    keep, truth = prep.observed, prep.scene.gaussians.labels
    return mean_iou(labels[keep], truth[keep], prep.scene.n_classes)


def held_out_maps(labels: np.ndarray, prep: Prepared) -> np.ndarray:
    """[V_held_out, P] the Gaussians' labels rendered in the held-out views (−1: no weight)."""
    n = prep.scene.n_classes
    return np.stack(
        [lf.render_labels(prep.held_out, labels, n, v) for v in range(prep.held_out.n_views)]
    )


def scores(
    labels: np.ndarray, maps: np.ndarray, gt: np.ndarray, prep: Prepared, low_support: float
) -> dict[str, float]:
    """Every score of one method's Gaussian labels (module docstring), with `maps` the labels
    rendered in the held-out views (`held_out_maps`) and `gt` those views' ground truth."""
    keep, truth, n = prep.observed, prep.scene.gaussians.labels, prep.scene.n_classes
    foreground = gt >= 0
    low = keep & (prep.n_eff < low_support)
    right = labels == truth

    def accuracy(mask: np.ndarray) -> float:
        return float(right[mask].mean()) if mask.any() else float("nan")

    return {
        "miou_3d": miou_3d(labels, prep),
        "macc_3d": mean_accuracy(labels[keep], truth[keep], n),
        "miou_2d": mean_iou(maps[foreground], gt[foreground], n),
        "acc_low_support": accuracy(low),
        "acc_high_support": accuracy(keep & ~low),
    }


def closed_form_check(prep: Prepared, sample: int, steps: int, seed: int) -> float:
    """The smallest cosine, over `sample` observed Gaussians (all of them when fewer), between
    b/‖b‖ and the maximiser of Σ w⟨f, F⟩ found by projected gradient ascent on the sphere from
    a random start (the objective's gradient is b; step 0.1/‖b‖ per iteration)."""
    rng = np.random.default_rng(derive_seed(seed, STUDY, "closed_form"))
    candidates = np.flatnonzero(prep.observed)
    ids = rng.choice(candidates, size=min(sample, len(candidates)), replace=False)
    b = prep.back.b[ids]
    f = lf.normalise(rng.normal(size=b.shape))
    step = 0.1 / np.linalg.norm(b, axis=1, keepdims=True)
    for _ in range(steps):
        f = lf.normalise(f + step * b)
    return float(np.min(np.sum(f * prep.unit[ids], axis=1)))


def reliability_bins(
    correct: np.ndarray, prep: Prepared, bins: int
) -> dict[str, dict[str, list[float]]]:
    """Per score r and ρ: the closed form's accuracy in `bins` equal-width bins of [0, 1] over
    the observed Gaussians (bin centre, accuracy, count; empty bins left out)."""
    out = {}
    for name in ("r", "rho"):
        score = np.clip(prep.reliability[name][prep.observed], 0, 1)
        which = np.minimum((score * bins).astype(int), bins - 1)
        hit = correct[prep.observed]
        counts = np.bincount(which, minlength=bins)
        right = np.bincount(which, weights=hit, minlength=bins)
        filled = counts > 0
        out[name] = {
            "centre": list((np.arange(bins)[filled] + 0.5) / bins),
            "accuracy": list(right[filled] / counts[filled]),
            "count": [int(c) for c in counts[filled]],
        }
    return out


def tuned_values(params: Mapping[str, Any], tuning_files: Sequence[str | Path]) -> dict:
    """{method: tuned values} for every listed method with a grid; a missing record stops."""
    chosen = selected(tuning_files)
    needed = [m for m in params["methods"] if m in params["tune"]["grid"]]
    missing = [m for m in needed if m not in chosen]
    if missing:
        raise ValueError(f"normlift: no tuning record for method(s) {missing} (rule normlift_tune)")
    return {m: chosen[m] for m in needed}


def run_job(
    params: Mapping[str, Any],
    seed: int,
    scene_path: str | Path,
    tuning_files: Sequence[str | Path],
    out_dir: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Lift and score every listed method on the scene of `seed`; write metrics.json and
    lifted.h5 to `out_dir` and return the metrics. Torch and BLAS run on `threads` threads."""
    seed_everything(derive_seed(seed, STUDY, "run"), threads)
    with threadpool_limits(limits=threads):
        return _run(params, seed, scene_path, tuning_files, Path(out_dir))


def _run(
    params: Mapping[str, Any],
    seed: int,
    scene_path: str | Path,
    tuning_files: Sequence[str | Path],
    out_dir: Path,
) -> dict[str, Any]:
    tuned = tuned_values(params, tuning_files)
    evaluation = params["evaluation"]
    prep = prepare(read_scene(scene_path), float(evaluation["observed_weight"]))
    text = prep.scene.text
    gt = prep.scene.gt2d[held_out_views(prep.scene)]
    per_method, arrays = {}, {}
    for method in params["methods"]:
        start = time.perf_counter()
        settings = settings_of(method, params, tuned)
        labels = lf.query_labels(lift(method, settings, prep, seed), text)
        maps = held_out_maps(labels, prep)
        per_method[method] = {
            **scores(labels, maps, gt, prep, float(evaluation["low_support"])),
            "work": work(method, settings, prep),
        }
        arrays[f"labels/{method}"] = labels.astype(np.int8)
        arrays[f"held_out/{method}"] = maps.astype(np.int8)
        wall = time.perf_counter() - start
        print(f"seed {seed} {method}: 3-D mIoU {per_method[method]['miou_3d']:.3f}, {wall:.2f} s")
    correct = lf.query_labels(prep.unit, text) == prep.scene.gaussians.labels
    keep = prep.observed
    intra, inter = lf.decomposition(prep.back)
    r = prep.reliability["r"]
    out = {
        "study": STUDY,
        "seed": seed,
        "methods": per_method,
        "auroc": {name: auroc(s[keep], correct[keep]) for name, s in prep.reliability.items()},
        "sanity": {
            "closed_form_min_cosine": closed_form_check(
                prep, int(evaluation["closed_form_sample"]), 200, seed
            ),
            "decomposition_max_error": float(np.max(np.abs(r**2 - intra - inter))),
        },
        "observed_share": float(keep.mean()),
        "low_support_share": float((prep.n_eff[keep] < float(evaluation["low_support"])).mean()),
        "reliability_bins": reliability_bins(correct, prep, int(evaluation["bins"])),
        "tuned": tuned,
    }
    write_json(out_dir / "metrics.json", out)
    write_h5(
        out_dir / "lifted.h5",
        {
            **arrays,
            "held_out/truth": gt.astype(np.int8),
            "truth": prep.scene.gaussians.labels.astype(np.int8),
            "observed": keep,
            "correct": correct,
            "n_eff": prep.n_eff,
            "intra": intra,
            "inter": inter,
            **{f"reliability/{name}": s for name, s in prep.reliability.items()},
        },
        attrs={"height": prep.scene.cameras.height, "width": prep.scene.cameras.width},
    )
    return out
