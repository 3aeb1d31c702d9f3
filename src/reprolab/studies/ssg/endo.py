"""EndoSeq [our invention]: endomicroscopy-like sequences of frame embeddings.

Not the paper's clinical dataset (which its abstract does not name): a stand-in that keeps the
structure a probe-based endomicroscopy video has. A bag is one sequence of T ~ U[length] frames
in R^dim. The world (from the seed) holds `n_prototypes` diagnostic prototypes and
`n_artefacts` artefact prototypes (motion blur, bubble, saturation), all N(0, centre_scale² I).

Per sequence: a private tissue centre (bag-specific nuisance, N(0, centre_scale² I)) and a
drift d_t, a Gaussian random walk with step `drift` that is added to every frame (the probe
moves, so evidence frames are shifted too). Frame noise is AR(1) with coefficient `smooth` and
stationary std `noise`, so neighbouring frames are correlated. Artefacts come in runs: each
frame starts an artefact run with probability `artefact_rate` / mean run length, of length
~ U[artefact_run], of one artefact type, in both classes alike. A positive sequence has
~ U[evidence_runs] contiguous runs of diagnostic frames of length ~ U[evidence_run] (one
prototype per run), placed over non-artefact frames; only those frames are labelled evidence.
A diagnostic frame's mean is tissue + evidence_mix · (prototype − tissue): with evidence_mix
< 1 the lesion is seen through the sequence's own tissue, so evidence differs between
sequences and is not an outlier a max-pooling model spots for free.
"""

from __future__ import annotations

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.studies.ssg.data import Bags, balanced_labels, sizes

KEYS = (
    "n_train", "n_test", "dim", "length", "n_prototypes", "n_artefacts", "centre_scale", "noise",
    "smooth", "drift", "artefact_rate", "artefact_run", "evidence_runs", "evidence_run",
    "evidence_mix",
)  # fmt: skip


def _check(spec: dict) -> None:
    missing = [k for k in KEYS if k not in spec]
    if missing:
        raise ValueError(f"endo dataset: missing keys {missing}")
    if not 0 <= spec["smooth"] < 1:
        raise ValueError(f"endo dataset: smooth {spec['smooth']} not in [0, 1)")


def _runs(rng: np.random.Generator, t: int, count: int, bounds: list[int]) -> list[slice]:
    """`count` runs with lengths ~ U[bounds] at random start positions inside [0, t)."""
    out = []
    for _ in range(count):
        length = int(min(t, rng.integers(bounds[0], bounds[1] + 1)))
        start = int(rng.integers(0, t - length + 1))
        out.append(slice(start, start + length))
    return out


def _sequence(spec: dict, world: dict, t: int, label: int, rng: np.random.Generator):
    dim, scale = spec["dim"], spec["centre_scale"]
    tissue = rng.standard_normal(dim) * scale
    means = np.tile(tissue, (t, 1))
    is_artefact = np.zeros(t, dtype=bool)
    mean_run = 0.5 * (spec["artefact_run"][0] + spec["artefact_run"][1])
    n_art = rng.binomial(t, spec["artefact_rate"] / mean_run)
    for run in _runs(rng, t, n_art, spec["artefact_run"]):
        means[run] = world["artefacts"][rng.integers(len(world["artefacts"]))]
        is_artefact[run] = True
    evidence = np.zeros(t, dtype=np.int64)
    if label:
        n_runs = int(rng.integers(spec["evidence_runs"][0], spec["evidence_runs"][1] + 1))
        for run in _runs(rng, t, n_runs, spec["evidence_run"]):
            proto = world["prototypes"][rng.integers(len(world["prototypes"]))]
            means[run] = tissue + spec["evidence_mix"] * (proto - tissue)
            evidence[run] = 1
            is_artefact[run] = False
    drift = np.cumsum(spec["drift"] * rng.standard_normal((t, dim)), axis=0)
    a = spec["smooth"]
    shocks = rng.standard_normal((t, dim)) * spec["noise"] * np.sqrt(1 - a * a)
    noise = np.empty((t, dim))
    noise[0] = rng.standard_normal(dim) * spec["noise"]
    for i in range(1, t):
        noise[i] = a * noise[i - 1] + shocks[i]
    return (means + drift + noise).astype(np.float32), evidence


def make(spec: dict, seed: int) -> tuple[Bags, Bags]:
    """(train, test) EndoSeq bags; a pure function of the spec and the seed."""
    _check(spec)
    wrng = np.random.default_rng(derive_seed(seed, "ssg", "endo", "world"))
    world = {
        "prototypes": wrng.standard_normal((spec["n_prototypes"], spec["dim"]))
        * spec["centre_scale"],
        "artefacts": wrng.standard_normal((spec["n_artefacts"], spec["dim"]))
        * spec["centre_scale"],
    }
    out = []
    for part, count in (("train", spec["n_train"]), ("test", spec["n_test"])):
        rng = np.random.default_rng(derive_seed(seed, "ssg", "endo", part))
        ys = balanced_labels(rng, count)
        seqs = [
            _sequence(spec, world, int(t), int(y), rng)
            for t, y in zip(sizes(rng, count, spec["length"]), ys, strict=True)
        ]
        out.append(Bags([s[0] for s in seqs], ys, [s[1] for s in seqs]))
    return out[0], out[1]
