"""The ngpt_fp4 table, claim checks, study metrics and curves, from the per-job files.

Table: rows = architecture × recipe (`gpt/fp32`, `gpt/nvfp4`, ...); columns: the final
validation loss (nats per character), its difference to the same architecture's full-precision
run of the same seed (Δ, paired: same initial weights and batches), loss spikes per run, the
largest gradient entry any block linear layer saw, and sharpness (the top Hessian eigenvalue of
the full-precision loss at the trained weights). Δ does not apply to the full-precision rows.

The mechanism (jobs.mechanism_job): per architecture and hidden size d, the SNR (dB) of the
forward GEMMs' quantised dot products, the product correlation ρ̄ and the noise correlation
ρ̄_e, averaged over the block linear layers; per seed the slope of SNR against log2 d (least
squares over the hidden sizes) and ρ̄ averaged over the hidden sizes.

Claims, in the abstract's order (paired checks are one-sided paired t-tests over the seeds,
Holm-corrected within the study; they hold when the mean difference points the claimed way by
more than its minimum effect and the adjusted p < alpha):
1. `paired`: nGPT's NVFP4-plain Δ is smaller than GPT's;
2. `paired`: GPT needs the Hadamard transform and stochastic rounding: its Δ under
   `nvfp4_rht_sr` is smaller than under plain NVFP4;
3. `bound`: nGPT does not: its plain Δ exceeds its `nvfp4_rht_sr` Δ by at most `claims.margin`
   (mean over seeds);
4. `tolerance`: quantisation noise stays uncorrelated in both: every |ρ̄_e| (architecture × d,
   mean over seeds) within `claims.noise_tolerance` of 0;
5. `paired`: the element-wise products correlate more in nGPT (ρ̄ averaged over d);
6. `paired`: nGPT's SNR grows faster with d (slope in dB per doubling);
7. `paired`: nGPT's loss landscape is flatter: lower sharpness under plain NVFP4.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import bound_check, paired_check, tolerance_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats

VAL_LOSS, DELTA, SPIKES, MAX_GRADIENT, SHARPNESS = (
    "val loss",
    "Δ vs FP32",
    "loss spikes",
    "max |grad|",
    "sharpness",
)
COLUMNS = (VAL_LOSS, DELTA, SPIKES, MAX_GRADIENT, SHARPNESS)
REFERENCE = "fp32"
PLAIN, HADAMARD = "nvfp4", "nvfp4_rht_sr"
NOTES = (
    "Both architectures trained at the learning rate their tuning job selected on the tuning "
    "seeds (full precision only; metrics.json `learning_rates`), every recipe of a seed from "
    "the same initial weights on the same batches, so Δ is paired by seed. Paired checks are "
    "one-sided paired t-tests over the seeds listed, Holm-corrected within the study; they "
    "hold when the mean difference points the claimed way by more than min_effect and the "
    "adjusted p < alpha. The bound check holds when the mean over seeds is within the bound; "
    "the tolerance check when every value (architecture x hidden size, mean over seeds) is "
    "within the tolerance."
)


def run_path(runs_dir: str | Path, arch: str, seed: int) -> Path:
    """Where the run job of (arch, seed) writes its metrics.json."""
    return Path(runs_dir) / arch / f"seed{seed}" / "metrics.json"


def mechanism_path(runs_dir: str | Path, arch: str, seed: int) -> Path:
    """Where the mechanism job of (arch, seed) writes its measurements."""
    return Path(runs_dir) / arch / f"seed{seed}" / "mechanism.json"


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: str | Path) -> dict:
    """{"runs": {arch: [metrics.json per seed]}, "mechanism": {arch: [mechanism.json per seed]},
    "tuning": {arch: selected learning rate}} read from runs_dir."""
    archs = params["architectures"]
    runs = {a: [read_json(run_path(runs_dir, a, s)) for s in seeds] for a in archs}
    mechanism = {a: [read_json(mechanism_path(runs_dir, a, s)) for s in seeds] for a in archs}
    return {"runs": runs, "mechanism": mechanism, "tuning": {a: runs[a][0]["lr"] for a in archs}}


def row(arch: str, recipe: str) -> str:
    """A table row's name."""
    return f"{arch}/{recipe}"


def values(runs: dict, arch: str, recipe: str, key: str) -> np.ndarray:
    """One run value per seed of `arch` under `recipe` (`spikes` counted)."""
    out = []
    for job in runs["runs"][arch]:
        value = job["runs"][recipe][key]
        out.append(len(value) if key == "spikes" else value)
    return np.asarray(out, dtype=float)


def gaps(runs: dict, arch: str, recipe: str) -> np.ndarray:
    """Per seed, `recipe`'s validation loss minus the full-precision run's."""
    return values(runs, arch, recipe, "val_loss") - values(runs, arch, REFERENCE, "val_loss")


def records(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[Record]:
    """Long-format records of every table cell."""
    out = []
    for arch in params["architectures"]:
        for recipe in params["recipes"]:
            cells = {
                VAL_LOSS: values(runs, arch, recipe, "val_loss"),
                SPIKES: values(runs, arch, recipe, "spikes"),
                MAX_GRADIENT: values(runs, arch, recipe, "max_gradient"),
                SHARPNESS: values(runs, arch, recipe, "sharpness"),
            }
            if recipe != REFERENCE:
                cells[DELTA] = gaps(runs, arch, recipe)
            for column, per_seed in cells.items():
                out += [
                    Record(row(arch, recipe), column, seed, float(value))
                    for seed, value in zip(seeds, per_seed, strict=True)
                ]
    return out


def table(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> Table:
    """Rows = architecture × recipe; the columns of the module docstring."""
    rows = [row(a, r) for a in params["architectures"] for r in params["recipes"]]
    return Table(
        records(params, runs, seeds),
        rows,
        list(COLUMNS),
        "GPT and nGPT trained in full precision and under emulated NVFP4 (plain: per-tensor "
        "scale, round to nearest; + random Hadamard transform on Wgrad and stochastic rounding; "
        "static scales frozen at the first step with headroom): validation loss (nats/char), "
        "its paired difference to full precision, loss spikes, largest gradient and top "
        "Hessian eigenvalue, mean ± std over seeds.",
        frozenset((row(a, REFERENCE), DELTA) for a in params["architectures"]),
    )


def mechanism_series(runs: dict, arch: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    """The hidden sizes d and (seeds, d) values of `key` (snr_db, rho, rho_noise), layer means."""
    jobs = runs["mechanism"][arch]
    hiddens = np.asarray(sorted(int(d) for d in jobs[0]["sizes"]), dtype=float)
    table_ = [[job["sizes"][str(int(d))][key] for d in hiddens] for job in jobs]
    return hiddens, np.asarray(table_, dtype=float)


def snr_slopes(runs: dict, arch: str) -> np.ndarray:
    """Per seed, the least-squares slope of SNR (dB) against log2 d: dB per doubling."""
    hiddens, snr = mechanism_series(runs, arch, "snr_db")
    return np.asarray([np.polyfit(np.log2(hiddens), per_d, 1)[0] for per_d in snr])


def mean_rho(runs: dict, arch: str) -> np.ndarray:
    """Per seed, the product correlation ρ̄ averaged over the hidden sizes."""
    return mechanism_series(runs, arch, "rho")[1].mean(axis=1)


def claim_checks(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict]:
    """The checks of the module docstring."""
    spec = params["claims"]
    test = {"alpha": spec["alpha"], "min_effect": spec["min_effect"]}
    gap_metric = "Δ validation loss vs FP32 (nats/char)"
    checks = [
        paired_check(
            "nGPT's validation-loss gap to full precision under plain NVFP4 (per-tensor scale, "
            "no Hadamard, round to nearest) is smaller than GPT's",
            gap_metric,
            "ngpt",
            "gpt",
            gaps(runs, "ngpt", PLAIN),
            gaps(runs, "gpt", PLAIN),
            seeds,
            direction="less",
            **test,
        ),
        paired_check(
            "GPT needs the random Hadamard transform and stochastic rounding: they shrink its "
            "NVFP4 gap",
            gap_metric,
            row("gpt", HADAMARD),
            row("gpt", PLAIN),
            gaps(runs, "gpt", HADAMARD),
            gaps(runs, "gpt", PLAIN),
            seeds,
            direction="less",
            **test,
        ),
        bound_check(
            "nGPT does not need them: its plain NVFP4 gap is within the margin of its gap with "
            "the Hadamard transform and stochastic rounding",
            "mean (plain Δ − Hadamard/SR Δ), nats/char",
            {"ngpt": float(np.mean(gaps(runs, "ngpt", PLAIN) - gaps(runs, "ngpt", HADAMARD)))},
            "at_most",
            spec["margin"],
        ),
        noise_check(params, runs),
        paired_check(
            "nGPT's element-wise products of the forward dot products correlate more than GPT's",
            "product correlation ρ̄ (mean over layers and hidden sizes)",
            "ngpt",
            "gpt",
            mean_rho(runs, "ngpt"),
            mean_rho(runs, "gpt"),
            seeds,
            direction="greater",
            alpha=spec["alpha"],
            min_effect=spec["min_rho_effect"],
        ),
        paired_check(
            "nGPT's SNR of quantised dot products grows faster with the hidden size than GPT's",
            "slope of SNR (dB) against log2 d",
            "ngpt",
            "gpt",
            snr_slopes(runs, "ngpt"),
            snr_slopes(runs, "gpt"),
            seeds,
            direction="greater",
            alpha=spec["alpha"],
            min_effect=spec["min_slope_effect"],
        ),
        paired_check(
            "nGPT's loss landscape is flatter: lower top Hessian eigenvalue after NVFP4 training",
            "sharpness (top Hessian eigenvalue)",
            "ngpt",
            "gpt",
            values(runs, "ngpt", PLAIN, "sharpness"),
            values(runs, "gpt", PLAIN, "sharpness"),
            seeds,
            direction="less",
            alpha=spec["alpha"],
        ),
    ]
    return checks


def noise_check(params: dict[str, Any], runs: dict) -> dict:
    """Claim 4: every architecture's and hidden size's mean noise correlation near 0."""
    measured = {}
    for arch in params["architectures"]:
        hiddens, noise = mechanism_series(runs, arch, "rho_noise")
        for d, value in zip(hiddens, noise.mean(axis=0), strict=True):
            measured[f"{arch} d={int(d)}"] = float(value)
    return tolerance_check(
        "Quantisation noise stays uncorrelated across the hidden dimension in both models",
        "noise correlation ρ̄_e (mean over layers and seeds)",
        measured,
        0.0,
        params["claims"]["noise_tolerance"],
    )


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: per row the seed statistics of each column, the mechanism per d, the
    slopes, and the learning rates the tuning records selected."""
    out: dict[str, Any] = {"seeds": list(seeds), "learning_rates": runs["tuning"], "rows": {}}
    for arch in params["architectures"]:
        for recipe in params["recipes"]:
            stats = {
                key: seed_stats(values(runs, arch, recipe, key))
                for key in ("val_loss", "max_gradient", "sharpness", "spikes")
            }
            if recipe != REFERENCE:
                stats["delta"] = seed_stats(gaps(runs, arch, recipe))
            out["rows"][row(arch, recipe)] = stats
    mechanism: dict[str, Any] = {}
    for arch in params["architectures"]:
        entry: dict[str, Any] = {}
        for key in ("snr_db", "rho", "rho_noise"):
            hiddens, series = mechanism_series(runs, arch, key)
            entry[key] = {str(int(d)): seed_stats(series[:, j]) for j, d in enumerate(hiddens)}
        entry["snr_slope_db_per_doubling"] = seed_stats(snr_slopes(runs, arch))
        entry["predicted_gain_db"] = {
            d: float(10 * np.log10(max(1e-12, 1 + (int(d) - 1) * stats["mean"])))
            for d, stats in entry["rho"].items()
        }
        mechanism[arch] = entry
    out["mechanism"] = mechanism
    return out


def curve_rows(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: training loss per logged window (x = step at the window's end, series
    `<arch>/<recipe>`) and the mechanism against d (series `<arch>/snr_db`, `<arch>/rho`,
    `<arch>/rho_noise`, x = d), means over seeds."""
    points = []
    for arch in params["architectures"]:
        every = runs["runs"][arch][0]["log_every"]
        steps = params["train"]["steps"]
        for recipe in params["recipes"]:
            curves = np.asarray([job["runs"][recipe]["losses"] for job in runs["runs"][arch]])
            for k, loss in enumerate(curves.mean(axis=0)):
                points.append((row(arch, recipe), float(min((k + 1) * every, steps)), float(loss)))
        for key in ("snr_db", "rho", "rho_noise"):
            hiddens, series = mechanism_series(runs, arch, key)
            points += [
                (f"{arch}/{key}", float(d), float(v))
                for d, v in zip(hiddens, series.mean(axis=0), strict=True)
            ]
    return curve_frame(points)
