"""In-context training of the two networks on a pre-generated pool of prompts.

The pool (in the design card's prototype, generating prompts on the fly dominated the step
time) holds `pool_prompts` prompts per (setting, n) of the evaluation grid, drawn from the
job's own training seed, never from the evaluation prompts. A step picks one (setting, n)
uniformly — n is thus log-uniform over the grid, and context length and mixture type match
evaluation — then `batch` prompts of that pool entry, and minimises the squared error of the
predictions at the queries against their noisy targets (what an in-context learner observes).
Adam, fixed steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from reprolab.studies.icl_manifold.manifolds import Prompts, make_prompts


def tensors(prompts: Prompts, rows: np.ndarray | slice) -> tuple[torch.Tensor, ...]:
    """(context x, context y, query x, query y) of the selected prompts as float32 tensors."""
    n = prompts.n
    x = torch.from_numpy(prompts.x[rows].astype(np.float32))
    y = torch.from_numpy(prompts.y[rows].astype(np.float32))
    return x[:, :n], y[:, :n], x[:, n:], y[:, n:]


def make_pool(
    settings: dict[str, dict[str, Any]],
    sizes: list[int],
    queries: int,
    count: int,
    rng: np.random.Generator,
) -> list[Prompts]:
    """One batch of `count` prompts per (setting, n), settings in the given order."""
    return [make_prompts(spec, n, queries, count, rng) for spec in settings.values() for n in sizes]


@dataclass(frozen=True)
class TrainResult:
    """Per-step training losses."""

    losses: np.ndarray


def train_model(
    model: nn.Module, pool: list[Prompts], train: dict[str, Any], rng: np.random.Generator
) -> TrainResult:
    """Train `model` in context on `pool` for train['steps'] Adam steps."""
    optimiser = torch.optim.Adam(model.parameters(), lr=train["lr"])
    losses = np.empty(train["steps"])
    for step in range(train["steps"]):
        prompts = pool[int(rng.integers(len(pool)))]
        rows = rng.choice(prompts.x.shape[0], size=min(train["batch"], prompts.x.shape[0]))
        xc, yc, xq, yq = tensors(prompts, np.sort(rows))
        loss = torch.mean((model(xc, yc, xq) - yq) ** 2)
        optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), train["clip"])
        optimiser.step()
        losses[step] = float(loss.detach())
    return TrainResult(losses)


@torch.no_grad()
def predict(model: nn.Module, prompts: Prompts, chunk: int) -> np.ndarray:
    """Predictions (P, q) at the queries of `prompts`, `chunk` prompts at a time."""
    out = []
    for start in range(0, prompts.x.shape[0], chunk):
        xc, yc, xq, _ = tensors(prompts, slice(start, start + chunk))
        out.append(model(xc, yc, xq).double().numpy())
    return np.concatenate(out)
