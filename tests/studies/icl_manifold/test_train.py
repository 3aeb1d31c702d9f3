"""In-context training on a pool: a deterministic loss decrease, predictions of every prompt."""

from __future__ import annotations

import numpy as np
import torch

from reprolab.studies.icl_manifold.models import TwoStage
from reprolab.studies.icl_manifold.spec import setting_spec
from reprolab.studies.icl_manifold.train import make_pool, predict, train_model


def test_training_lowers_the_loss_and_predicts_every_prompt(ci_params, torch_one_thread):
    settings = {s: setting_spec(ci_params, s) for s in ("circles", "mixture")}
    pool = make_pool(settings, [32, 64], 4, 8, np.random.default_rng(0))
    assert len(pool) == 4
    torch.manual_seed(0)
    init = {**ci_params["twostage"]["init"], "h0": 3.0}  # a poor start, so there is room
    model = TwoStage(4, exact=False, init=init)
    cfg = {"steps": 30, "lr": 0.05, "batch": 8, "clip": 1.0}
    result = train_model(model, pool, cfg, np.random.default_rng(1))
    assert result.losses.shape == (30,)
    assert result.losses[-10:].mean() < result.losses[:10].mean()
    pred = predict(model, pool[0], chunk=3)
    assert pred.shape == (8, 4) and np.all(np.isfinite(pred))
