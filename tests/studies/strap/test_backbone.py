"""The backbone: blocks of both families, offline loading, tokens, pixel normalisation,
SynthShapes and a deterministic tiny pre-training."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch import nn

from reprolab.core.io import read_json
from reprolab.studies.strap.backbone import (
    PRETRAIN_RECORD,
    blocks,
    build_vit,
    hidden_states,
    load_backbone,
    normalise,
    pretrain,
    shapes_dataset,
    token_count,
    vit_config,
)

from .conftest import PARAMS, SPEC, TOKENS, WIDTH, random_clips

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def tiny_clip(layers: int = 2, image_size: int = 16, seed: int = 0) -> nn.Module:
    """A randomly initialised tiny CLIP vision tower."""
    from transformers import CLIPVisionConfig, CLIPVisionModel

    torch.manual_seed(seed)
    config = CLIPVisionConfig(
        image_size=image_size,
        patch_size=8,
        hidden_size=WIDTH,
        intermediate_size=2 * WIDTH,
        num_hidden_layers=layers,
        num_attention_heads=2,
        projection_dim=8,
    )
    return CLIPVisionModel(config).eval()


def _same_weights(a: nn.Module, b: nn.Module) -> bool:
    left, right = a.state_dict(), b.state_dict()
    return left.keys() == right.keys() and all(torch.equal(left[k], right[k]) for k in left)


def test_vit_config_reads_the_spec():
    config = vit_config({**SPEC, "layers": 2, "mlp_ratio": 3})
    assert (config.image_size, config.patch_size, config.hidden_size) == (16, 8, 16)
    assert (config.num_hidden_layers, config.num_attention_heads) == (2, 2)
    assert config.intermediate_size == 48
    assert config.num_channels == 3


def test_build_vit_is_seeded():
    assert _same_weights(build_vit(SPEC, 3), build_vit(SPEC, 3))
    assert not _same_weights(build_vit(SPEC, 3), build_vit(SPEC, 4))


def test_blocks_of_a_vit(vit):
    layers = blocks(vit)
    assert isinstance(layers, nn.ModuleList) and len(layers) == SPEC["layers"]
    assert all(any(layer is m for m in vit.modules()) for layer in layers)


def test_blocks_of_a_clip_vision_model():
    model = tiny_clip(layers=2)
    layers = blocks(model)
    assert isinstance(layers, nn.ModuleList) and len(layers) == 2
    assert type(layers[0]).__name__ == "CLIPEncoderLayer"


def test_blocks_of_something_else_is_refused():
    with pytest.raises(TypeError, match="Linear: no transformer blocks found"):
        blocks(nn.Linear(2, 2))


def test_token_count():
    assert token_count(build_vit(SPEC, 0)) == TOKENS == 5
    assert token_count(build_vit({**SPEC, "image_size": 32}, 0)) == 17
    assert token_count(tiny_clip(image_size=24)) == 10


@pytest.mark.parametrize("family", ["vit", "clip"])
def test_hidden_states_have_every_token(family):
    model = build_vit(SPEC, 0).eval() if family == "vit" else tiny_clip()
    out = hidden_states(model, random_clips(1, 3, seed=0)[0])
    assert out.shape == (3, token_count(model), WIDTH)


def test_load_backbone_round_trips_a_vit(tmp_path, no_network):
    model = build_vit(SPEC, 1).eval()
    model.save_pretrained(tmp_path / "vit")
    loaded = load_backbone(tmp_path / "vit")
    assert type(loaded).__name__ == "ViTModel" and not loaded.training
    assert loaded.pooler is None
    assert _same_weights(model, loaded)
    pixels = random_clips(1, 2, seed=0)[0]
    with torch.no_grad():
        torch.testing.assert_close(hidden_states(loaded, pixels), hidden_states(model, pixels))


def test_load_backbone_round_trips_a_clip_vision_model(tmp_path, no_network):
    model = tiny_clip()
    model.save_pretrained(tmp_path / "clip")
    loaded = load_backbone(str(tmp_path / "clip"))
    assert type(loaded).__name__ == "CLIPVisionModel" and not loaded.training
    assert _same_weights(model, loaded)
    assert len(blocks(loaded)) == 2


def test_load_backbone_reads_the_vision_tower_of_a_full_clip_model(tmp_path, no_network):
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(0)
    text = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1}
    vision = {"image_size": 16, "patch_size": 8, "hidden_size": WIDTH, "intermediate_size": 32}
    config = CLIPConfig(
        text_config={**text, "num_attention_heads": 2, "vocab_size": 50},
        vision_config={**vision, "num_hidden_layers": 2, "num_attention_heads": 2},
        projection_dim=8,
    )
    full = CLIPModel(config)
    full.save_pretrained(tmp_path / "clip_full")
    loaded = load_backbone(tmp_path / "clip_full")
    assert type(loaded).__name__ == "CLIPVisionModel" and len(blocks(loaded)) == 2
    tower, weights = full.vision_model.state_dict(), loaded.state_dict()
    assert set(tower) <= set(weights)
    assert all(torch.equal(weights[name], weight) for name, weight in tower.items())


def test_load_backbone_refuses_another_model_type(tmp_path, no_network):
    from transformers import BertConfig

    folder = tmp_path / "bert"
    BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2).save_pretrained(folder)
    with pytest.raises(ValueError, match=re.escape(str(folder)) + ".*'bert'"):
        load_backbone(folder)


def test_normalise_shape_dtype_and_values():
    pixels = np.zeros((2, 4, 5, 4, 3), dtype=np.uint8)
    pixels[..., 0] = 255
    pixels[..., 1] = 0
    pixels[..., 2] = 51
    out = normalise(pixels, mean=[0.5, 0.0, 0.2], std=[0.25, 1.0, 0.5])
    assert out.shape == (2, 4, 3, 5, 4)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out[:, :, 0], torch.full((2, 4, 5, 4), 2.0))
    torch.testing.assert_close(out[:, :, 1], torch.zeros(2, 4, 5, 4))
    torch.testing.assert_close(out[:, :, 2], torch.zeros(2, 4, 5, 4))


def test_normalise_keeps_the_pixel_layout():
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(3, 4, 3), dtype=np.uint8)  # one image, H=3, W=4
    out = normalise(pixels, mean=[0.0] * 3, std=[1.0] * 3)
    assert out.shape == (3, 3, 4)
    for c in range(3):
        np.testing.assert_allclose(out[c].numpy(), pixels[..., c] / 255.0, rtol=1e-6)
    from_tensor = normalise(torch.as_tensor(pixels), mean=[0.0] * 3, std=[1.0] * 3)
    torch.testing.assert_close(from_tensor, out)


def test_shapes_dataset_is_deterministic_and_labelled():
    images, labels = shapes_dataset(30, seed=5, size=16, radius=(2.0, 4.0))
    again, again_labels = shapes_dataset(30, seed=5, size=16, radius=(2.0, 4.0))
    assert images.shape == (30, 16, 16, 3) and images.dtype == np.uint8
    assert labels.shape == (30,)
    np.testing.assert_array_equal(images, again)
    np.testing.assert_array_equal(labels, again_labels)
    assert set(labels.tolist()) <= set(range(10))
    assert np.all(images.reshape(30, -1).max(1) > 0)  # every image shows a sprite
    other, _ = shapes_dataset(30, seed=6, size=16, radius=(2.0, 4.0))
    assert not np.array_equal(images, other)


def test_shapes_dataset_colours_follow_the_label():
    images, labels = shapes_dataset(200, seed=0, size=16, radius=(3.0, 4.0))
    assert set(labels.tolist()) == set(range(10))  # 200 draws reach every class
    for image, label in zip(images, labels, strict=True):
        pixels = image.reshape(-1, 3).astype(int)
        brightest = pixels[pixels.sum(1).argmax()]
        # class = shape x colour, colour = label % 2: red (0.9, 0.15, 0.15) or green
        assert int(brightest.argmax()) == int(label) % 2


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """Two pre-trainings of the tiny ViT from the same spec and seed."""
    root = tmp_path_factory.mktemp("pretrain")
    records = [pretrain(SPEC, PARAMS["pretrain"], root / name) for name in ("a", "b")]
    return root, records


def test_pretrain_writes_a_loadable_backbone_and_its_record(pretrained, no_network):
    root, records = pretrained
    folder = root / "a"
    loaded = load_backbone(folder)
    assert len(blocks(loaded)) == SPEC["layers"]
    assert loaded.config.hidden_size == WIDTH
    record = read_json(folder / PRETRAIN_RECORD)
    assert record.keys() == records[0].keys()
    assert record["test_accuracy"] == pytest.approx(records[0]["test_accuracy"])
    assert 0.0 <= record["test_accuracy"] <= 1.0
    assert np.isfinite(record["final_loss"])
    assert {k: record[k] for k in PARAMS["pretrain"]} == PARAMS["pretrain"]
    assert not _same_weights(loaded, build_vit(SPEC, PARAMS["pretrain"]["seed"]))  # it trained


def test_pretrain_twice_is_byte_identical(pretrained):
    root, records = pretrained
    first = (root / "a" / "model.safetensors").read_bytes()
    assert first == (root / "b" / "model.safetensors").read_bytes()
    assert (root / "a" / PRETRAIN_RECORD).read_bytes() == (
        root / "b" / PRETRAIN_RECORD
    ).read_bytes()
    assert records[0] == records[1]
