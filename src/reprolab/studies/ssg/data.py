"""Bags as plain containers, their padded tensor form and the dataset registry.

A `Bags` holds one list entry per bag: instances X_i (n_i, d) float32, a bag label y_i ∈ {0, 1}
and instance labels (1 = evidence, 0 = anything else; all zero in negative bags). Synthetic
generators (`synthmil`, `endo`) and the lead's loader of whole-slide feature bags all return
this type, so training never needs to know where bags came from. `make_dataset(spec, seed)`
builds a train and a test set from a params dict whose ``generator`` key names the generator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Bags:
    """A set of bags: per-bag instance arrays, bag labels and per-instance evidence labels."""

    X: list[np.ndarray]
    y: np.ndarray
    instance_labels: list[np.ndarray]

    def __post_init__(self) -> None:
        if not (len(self.X) == len(self.y) == len(self.instance_labels)) or len(self.X) == 0:
            raise ValueError(
                f"Bags: need equal, non-zero numbers of bags, labels and instance labels, got "
                f"{len(self.X)}, {len(self.y)}, {len(self.instance_labels)}"
            )
        dims = {x.shape[1] for x in self.X if x.ndim == 2}
        if len(dims) != 1 or any(x.ndim != 2 or len(x) == 0 for x in self.X):
            raise ValueError(f"Bags: every X_i must be (n_i ≥ 1, d) with one d, got dims {dims}")
        for i, (x, lab) in enumerate(zip(self.X, self.instance_labels, strict=True)):
            if lab.shape != (len(x),):
                raise ValueError(f"Bags: bag {i} has {len(x)} instances but {lab.shape} labels")
        if not set(np.unique(self.y).tolist()) <= {0, 1}:
            raise ValueError(f"Bags: labels must be 0/1, got {np.unique(self.y).tolist()}")

    @property
    def dim(self) -> int:
        """Instance dimension d."""
        return int(self.X[0].shape[1])

    def __len__(self) -> int:
        return len(self.X)


@dataclass
class Padded:
    """Bags stacked to (N, n_max, d) with a validity mask (N, n_max) and instance labels."""

    x: torch.Tensor
    mask: torch.Tensor
    y: torch.Tensor
    instance_labels: torch.Tensor

    def to(self, device: torch.device) -> Padded:
        """The same bags on `device`."""
        return Padded(*(t.to(device) for t in (self.x, self.mask, self.y, self.instance_labels)))


def pad(bags: Bags) -> Padded:
    """Zero-pad every bag to the longest one."""
    n_max = max(len(x) for x in bags.X)
    x = np.zeros((len(bags), n_max, bags.dim), dtype=np.float32)
    mask = np.zeros((len(bags), n_max), dtype=bool)
    inst = np.zeros((len(bags), n_max), dtype=np.int64)
    for i, (xi, li) in enumerate(zip(bags.X, bags.instance_labels, strict=True)):
        x[i, : len(xi)], mask[i, : len(xi)], inst[i, : len(xi)] = xi, True, li
    return Padded(
        torch.from_numpy(x),
        torch.from_numpy(mask),
        torch.from_numpy(np.asarray(bags.y, dtype=np.float32)),
        torch.from_numpy(inst),
    )


def make_dataset(spec: dict, seed: int) -> tuple[Bags, Bags]:
    """(train, test) bags from a dataset spec (``generator`` names the generator) and a seed."""
    from reprolab.studies.ssg import endo, synthmil

    generators: dict[str, Callable[[dict, int], tuple[Bags, Bags]]] = {
        "synthmil": synthmil.make,
        "endo": endo.make,
    }
    name = spec.get("generator")
    if name not in generators:
        raise ValueError(
            f"dataset: unknown generator {name!r}; expected one of {sorted(generators)}"
        )
    return generators[name](spec, seed)


def sizes(rng: np.random.Generator, count: int, bounds: list[int]) -> np.ndarray:
    """`count` bag sizes drawn uniformly from the inclusive range ``bounds = [low, high]``."""
    return rng.integers(bounds[0], bounds[1] + 1, size=count)


def balanced_labels(rng: np.random.Generator, count: int) -> np.ndarray:
    """Half negative, half positive (one more negative for odd counts), in random order."""
    return rng.permutation((np.arange(count) >= (count + 1) // 2).astype(np.int64))
