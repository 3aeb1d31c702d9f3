"""SynthMIL [our invention, design card]: sparse evidence among shared or bag-specific nuisance.

World (drawn from the seed, shared by train and test): `n_prototypes` evidence prototypes and
`n_global_centres` global nuisance centres, all N(0, centre_scale² I) in R^dim; optionally a
*mimic* centre at distance `mimic_distance` from evidence prototype 0 (a random direction).

Bag: n ~ U[bag_size]; label 1 for half of the bags. A positive bag has
max(1, round(witness_rate · n)) evidence instances (a random prototype + N(0, noise² I)).
Every other instance is nuisance: with probability `mimic_rate` it is drawn around the mimic;
otherwise, with probability `heterogeneity`, around one of `n_bag_centres` centres private to
the bag (drawn fresh, so no other bag shares them), else around one of `n_centres_per_bag`
global centres chosen for the bag. Nuisance and mimic appear in both classes alike, so only
evidence carries the label. Regimes: ``heterogeneity`` 1 = the card's *hetero*, 0 = *shared*;
the mimic makes max-pooling and attention mistake nuisance for evidence.
"""

from __future__ import annotations

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.studies.ssg.data import Bags, balanced_labels, sizes

KEYS = (
    "n_train", "n_test", "dim", "bag_size", "witness_rate", "heterogeneity", "n_prototypes",
    "noise", "centre_scale", "n_bag_centres", "n_global_centres", "n_centres_per_bag",
    "mimic_rate", "mimic_distance",
)  # fmt: skip


def _check(spec: dict) -> None:
    missing = [k for k in KEYS if k not in spec]
    if missing:
        raise ValueError(f"synthmil dataset: missing keys {missing}")
    if not 0 <= spec["heterogeneity"] <= 1 or not 0 <= spec["mimic_rate"] < 1:
        raise ValueError("synthmil dataset: heterogeneity must be in [0, 1], mimic_rate in [0, 1)")
    if not 0 < spec["witness_rate"] < 1:
        raise ValueError(f"synthmil dataset: witness_rate {spec['witness_rate']} not in (0, 1)")


def _world(spec: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    dim, scale = spec["dim"], spec["centre_scale"]
    prototypes = rng.standard_normal((spec["n_prototypes"], dim)) * scale
    centres = rng.standard_normal((spec["n_global_centres"], dim)) * scale
    direction = rng.standard_normal(dim)
    mimic = prototypes[0] + spec["mimic_distance"] * direction / np.linalg.norm(direction)
    return {"prototypes": prototypes, "centres": centres, "mimic": mimic}


def _bag(spec: dict, world: dict, n: int, label: int, rng: np.random.Generator):
    dim, noise = spec["dim"], spec["noise"]
    k = max(1, round(spec["witness_rate"] * n)) if label else 0
    private = rng.standard_normal((spec["n_bag_centres"], dim)) * spec["centre_scale"]
    chosen = rng.choice(len(world["centres"]), spec["n_centres_per_bag"], replace=False)
    shared = world["centres"][chosen]
    means = np.empty((n, dim))
    means[:k] = world["prototypes"][rng.integers(len(world["prototypes"]), size=k)]
    u = rng.random(n - k)
    mimic = u < spec["mimic_rate"]
    own = ~mimic & (rng.random(n - k) < spec["heterogeneity"])
    nuisance = np.where(
        own[:, None],
        private[rng.integers(len(private), size=n - k)],
        shared[rng.integers(len(shared), size=n - k)],
    )
    means[k:] = np.where(mimic[:, None], world["mimic"], nuisance)
    x = means + noise * rng.standard_normal((n, dim))
    labels = (np.arange(n) < k).astype(np.int64)
    order = rng.permutation(n)
    return x[order].astype(np.float32), labels[order]


def _bags(spec: dict, world: dict, count: int, rng: np.random.Generator) -> Bags:
    ys = balanced_labels(rng, count)
    xs, insts = [], []
    for n, label in zip(sizes(rng, count, spec["bag_size"]), ys, strict=True):
        x, inst = _bag(spec, world, int(n), int(label), rng)
        xs.append(x)
        insts.append(inst)
    return Bags(xs, ys, insts)


def make(spec: dict, seed: int) -> tuple[Bags, Bags]:
    """(train, test) SynthMIL bags; a pure function of the spec and the seed."""
    _check(spec)
    world = _world(spec, np.random.default_rng(derive_seed(seed, "ssg", "synthmil", "world")))
    train_rng = np.random.default_rng(derive_seed(seed, "ssg", "synthmil", "train"))
    test_rng = np.random.default_rng(derive_seed(seed, "ssg", "synthmil", "test"))
    return (
        _bags(spec, world, spec["n_train"], train_rng),
        _bags(spec, world, spec["n_test"], test_rng),
    )
