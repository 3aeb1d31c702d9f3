"""The backbone's pre-training: seeded, learning, and a ViT whose config the params set."""

from __future__ import annotations

import numpy as np
import torch

from reprolab.studies.trpr.backbone import pretrain, vit_config
from reprolab.studies.trpr.data import digit_images

SPEC = {"hidden": 16, "layers": 2, "heads": 2, "lr": 0.003, "epochs": 4, "batch_size": 32}


def test_pretraining_is_seeded_and_lowers_its_loss(torch_one_thread):
    images, digits = digit_images()
    images, digits = images[:256].astype(np.float32), digits[:256]
    first, curve = pretrain(images, digits, SPEC, seed=0)
    again, _ = pretrain(images, digits, SPEC, seed=0)
    for a, b in zip(first.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)
    assert curve[-1]["loss"] < curve[0]["loss"] and len(curve) == 4
    assert not first.training


def test_the_config_follows_the_params():
    config = vit_config(SPEC)
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (16, 2, 2)
    assert config.image_size == 16 and config.num_channels == 1 and config.patch_size == 4
