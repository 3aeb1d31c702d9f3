"""What several overcorrection test modules share: a prior, a shifted world's trials, chosen
orders, and a linear reader that is its own memory."""

from __future__ import annotations

import numpy as np
import torch

from reprolab.core.determinism import seed_everything
from reprolab.studies.overcorrection.icl_data import draw_prior, shifted_trials, shifted_world
from reprolab.studies.overcorrection.readers import LinearAttentionReader

PRIOR = draw_prior(np.random.default_rng(0))
TRIALS = shifted_trials(
    np.random.default_rng(2), shifted_world(np.random.default_rng(1), PRIOR, 1.5), 5, pool=20
)
ORDERS = np.stack([np.random.default_rng(i).permutation(20)[:6] for i in range(5)])


def own_memory_reader(eta: float) -> LinearAttentionReader:
    """A linear reader whose values are W_V z = η (y − A x): its correction is η Σ ⟨k, q⟩ r_k
    with r_k the residual against its own empty-context answer A x."""
    seed_everything(0, 1)
    reader = LinearAttentionReader()
    with torch.no_grad():
        reader.w_value.copy_(eta * torch.cat([-reader.skip, torch.eye(4)], 1))
    return reader
