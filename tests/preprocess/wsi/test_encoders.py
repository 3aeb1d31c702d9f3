"""Tile encoders: seeded random CNN and local transformers models, frozen and deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from reprolab.preprocess.wsi.encoders import build_encoder, resolve_spec

SPEC = {"kind": "random_conv", "seed": 3}


def embed(encoder, tiles: list[np.ndarray]) -> np.ndarray:
    """The encoder's features of uint8 tiles, through its own transform."""
    batch = torch.stack([encoder.transform(tile) for tile in tiles])
    with torch.inference_mode():
        return encoder(batch).numpy()


PINK = ([90, 40, 140], [230, 180, 210])
BROWN = ([120, 70, 20], [200, 210, 120])


def striped(rng: np.random.Generator, colours=PINK, size: int = 256) -> np.ndarray:
    """16 vertical dark stripes, 4 px wide, at random places (about 22% dark), pixel noise."""
    dark = np.zeros(size, dtype=bool)
    for x in rng.integers(0, size, 16):
        dark[x : x + 4] = True
    return _paint(rng, dark[None, :].repeat(size, axis=0), colours)


def dotted(rng: np.random.Generator, colours=PINK, size: int = 256) -> np.ndarray:
    """256 dark discs of radius 4.5 px at random places (about 23% dark), pixel noise."""
    y, x = np.mgrid[0:size, 0:size]
    dark = np.zeros((size, size), dtype=bool)
    for cy, cx in rng.integers(0, size, (256, 2)):
        dark |= (y - cy) ** 2 + (x - cx) ** 2 < 4.5**2
    return _paint(rng, dark, colours)


def _paint(rng: np.random.Generator, dark: np.ndarray, colours) -> np.ndarray:
    """Marks in the first colour on the second, with Gaussian pixel noise."""
    image = np.where(dark[..., None], colours[0], colours[1]).astype(np.float64)
    image += rng.normal(0, 12, image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


def held_out_separation(first: np.ndarray, second: np.ndarray) -> tuple[float, bool]:
    """Gap between two groups along their mean difference, in within-group standard deviations.

    The direction comes from the first half of each group and is measured on the second half;
    also whether every held-out tile of `first` projects above every held-out tile of `second`.
    """
    half = len(first) // 2
    direction = first[:half].mean(0) - second[:half].mean(0)
    direction /= np.linalg.norm(direction)
    a, b = first[half:] @ direction, second[half:] @ direction
    spread = np.sqrt((a.var() + b.var()) / 2)
    return float((a.mean() - b.mean()) / spread), bool(a.min() > b.max())


def test_random_conv_is_deterministic_and_seeded():
    tiles = [striped(np.random.default_rng(i)) for i in range(4)]
    first, second = build_encoder(SPEC), build_encoder(dict(SPEC))
    for a, b in zip(first.state_dict().values(), second.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert np.array_equal(embed(first, tiles), embed(second, tiles))
    other = build_encoder({**SPEC, "seed": 4})
    assert not np.allclose(embed(first, tiles), embed(other, tiles))


def test_building_leaves_the_global_random_state_alone():
    torch.manual_seed(11)
    state = torch.get_rng_state()
    build_encoder(SPEC)
    assert torch.equal(torch.get_rng_state(), state)


def test_random_conv_is_frozen_in_eval_mode():
    encoder = build_encoder(SPEC)
    assert not encoder.training
    assert all(not p.requires_grad for p in encoder.parameters())
    encoder.train()
    assert not encoder.training and not any(m.training for m in encoder.modules())


def test_random_conv_shape_and_attrs():
    encoder = build_encoder({**SPEC, "widths": [8, 16], "input_size": 48})
    assert (encoder.dim, encoder.input_size) == (32, 48)
    assert embed(encoder, [striped(np.random.default_rng(0))]).shape == (1, 32)
    attrs = encoder.attrs()
    assert attrs["encoder_kind"] == "random_conv" and attrs["encoder_dim"] == 32
    assert attrs["encoder_seed"] == 3 and attrs["encoder_name"] == "random_conv"
    assert json.loads(attrs["encoder_spec"]) == {
        "input_size": 48,
        "kind": "random_conv",
        "name": "random_conv",
        "seed": 3,
        "widths": [8, 16],
    }
    default = build_encoder(SPEC)
    assert (default.dim, default.input_size) == (256, 96)


def test_transform_resizes_and_normalises():
    encoder = build_encoder(SPEC)
    tile = np.full((256, 256, 3), 255, dtype=np.uint8)
    tensor = encoder.transform(tile)
    assert tensor.shape == (3, 96, 96) and tensor.dtype == torch.float32
    assert torch.allclose(tensor, torch.full_like(tensor, 2.0))
    with pytest.raises(ValueError, match="uint8 tile"):
        encoder.transform(tile.astype(np.float32))


def test_random_conv_separates_textures_of_the_same_colours():
    rng = np.random.default_rng(0)
    encoder = build_encoder(SPEC)
    stripes = embed(encoder, [striped(rng) for _ in range(24)])
    dots = embed(encoder, [dotted(rng) for _ in range(24)])
    gap, disjoint = held_out_separation(stripes, dots)
    assert gap > 3 and disjoint


def test_random_conv_separates_colours_of_the_same_texture():
    rng = np.random.default_rng(1)
    encoder = build_encoder(SPEC)
    pink = embed(encoder, [striped(rng, PINK) for _ in range(12)])
    brown = embed(encoder, [striped(rng, BROWN) for _ in range(12)])
    between = np.linalg.norm(pink.mean(0) - brown.mean(0))
    within = max(np.linalg.norm(x - x.mean(0), axis=1).mean() for x in (pink, brown))
    assert between > 3 * within


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "resnet"}, r"wsi.features.encoder.kind: got 'resnet'"),
        ({"kind": "random_conv"}, r"wsi.features.encoder.seed: required"),
        ({**SPEC, "depth": 3}, r"wsi.features.encoder.depth: unknown key"),
        ({**SPEC, "widths": []}, r"wsi.features.encoder.widths"),
        ({**SPEC, "input_size": 2}, r"wsi.features.encoder.input_size"),
    ],
)
def test_bad_specs_name_the_key(spec, message):
    with pytest.raises(ValueError, match=message):
        resolve_spec(spec)


@pytest.fixture
def tiny_resnet(tmp_path: Path, monkeypatch) -> Path:
    """A randomly initialised two-stage ResNet saved with save_pretrained."""
    from transformers import ResNetConfig, ResNetModel

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    config = ResNetConfig(embedding_size=8, hidden_sizes=[8, 12], depths=[1, 1], layer_type="basic")
    ResNetModel(config).save_pretrained(tmp_path / "tiny_resnet")
    return tmp_path / "tiny_resnet"


@pytest.fixture
def tiny_vit(tmp_path: Path, monkeypatch) -> Path:
    """A randomly initialised one-layer ViT on 32-px inputs, with a preprocessor config."""
    from transformers import ViTConfig, ViTModel

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    config = ViTConfig(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        image_size=32,
        patch_size=8,
    )
    path = tmp_path / "tiny_vit"
    ViTModel(config).save_pretrained(path)
    processor = {"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}
    (path / "preprocessor_config.json").write_text(json.dumps(processor))
    return path


def test_hf_local_resnet_gives_its_pooled_output(tiny_resnet):
    from transformers import ResNetModel

    encoder = build_encoder({"kind": "hf_local", "path": str(tiny_resnet)})
    assert (encoder.dim, encoder.input_size, encoder.name) == (12, 224, "tiny_resnet")
    assert encoder.transform.mean == (0.485, 0.456, 0.406)
    assert not encoder.training and not any(p.requires_grad for p in encoder.parameters())
    tiles = [striped(np.random.default_rng(i)) for i in range(3)]
    features = embed(encoder, tiles)
    assert features.shape == (3, 12)
    assert np.array_equal(features, embed(encoder, tiles))
    reference = ResNetModel.from_pretrained(tiny_resnet, local_files_only=True).eval()
    batch = torch.stack([encoder.transform(tile) for tile in tiles])
    with torch.inference_mode():
        expected = reference(pixel_values=batch).pooler_output.flatten(1).numpy()
    np.testing.assert_allclose(features, expected, rtol=1e-5, atol=1e-6)


def test_hf_local_vit_gives_its_cls_token(tiny_vit):
    from transformers import ViTModel

    encoder = build_encoder({"kind": "hf_local", "path": tiny_vit, "name": "vit", "seed": 0})
    assert (encoder.dim, encoder.input_size, encoder.name) == (16, 32, "vit")
    assert encoder.transform.mean == (0.5, 0.5, 0.5)
    assert not any(p.requires_grad for p in encoder.parameters())
    tiles = [dotted(np.random.default_rng(i)) for i in range(3)]
    features = embed(encoder, tiles)
    reference = ViTModel.from_pretrained(tiny_vit, local_files_only=True).eval()
    batch = torch.stack([encoder.transform(tile) for tile in tiles])
    with torch.inference_mode():
        expected = reference(pixel_values=batch).last_hidden_state[:, 0].numpy()
    np.testing.assert_allclose(features, expected, rtol=1e-5, atol=1e-6)


def test_hf_local_missing_path_names_path_and_key(tmp_path):
    missing = tmp_path / "no_such_model"
    with pytest.raises(FileNotFoundError, match=r"wsi.features.encoder.path.*no_such_model"):
        build_encoder({"kind": "hf_local", "path": missing})
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"wsi.features.encoder.path.*empty"):
        build_encoder({"kind": "hf_local", "path": tmp_path / "empty"})
    with pytest.raises(ValueError, match=r"wsi.features.encoder.path: required"):
        build_encoder({"kind": "hf_local"})
