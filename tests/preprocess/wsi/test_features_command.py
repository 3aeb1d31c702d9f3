"""`reprolab wsi features` on a tiny folder of tiled slides."""

from __future__ import annotations

import json

import pandas as pd
import torch

from reprolab.cli import main
from reprolab.preprocess.wsi.feature_bags import load_feature_bags
from tests.preprocess.wsi.test_features import make_cohort


def test_cli_embeds_a_folder(tmp_path, capsys):
    slides, patches = make_cohort(tmp_path)
    out = tmp_path / "features"
    argv = ["wsi", "features", "--slides", str(slides), "--patches", str(patches)]
    argv += ["--out", str(out), "--encoder", "random_conv", "--input-size", "32"]
    argv += ["--batch-size", "5", "--workers", "0", "--threads", "1", "--seed", "7", "--quiet"]
    assert main(argv) == 0
    assert "2 failed, 3 processed, 1 skipped" in capsys.readouterr().err
    listing = pd.read_csv(out / "process_list.csv", keep_default_na=False)
    assert list(listing["status"]) == [
        "processed",
        "failed",
        "failed",
        "processed",
        "skipped",
        "processed",
    ]
    bags = load_feature_bags(out, ["a", "d", "f"])
    assert [bag.features.shape for bag in bags] == [(12, 256), (0, 256), (12, 256)]
    assert bags[0].attrs["encoder_seed"] == 7
    assert json.loads(bags[0].attrs["encoder_spec"])["input_size"] == 32


def test_cli_runs_a_local_transformers_model(tmp_path, monkeypatch):
    from transformers import ViTConfig, ViTModel

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    config = ViTConfig(
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        image_size=32,
        patch_size=16,
    )
    ViTModel(config).save_pretrained(tmp_path / "vit")
    slides, patches = make_cohort(tmp_path)
    out = tmp_path / "features"
    argv = ["wsi", "features", "--slides", str(slides), "--patches", str(patches)]
    argv += ["--out", str(out), "--encoder", "hf_local", "--encoder-path", str(tmp_path / "vit")]
    assert main([*argv, "--workers", "0", "--threads", "1", "--quiet"]) == 0
    (bag,) = load_feature_bags(out, ["a"])
    assert bag.features.shape == (12, 8) and bag.attrs["encoder_name"] == "vit"


def test_cli_names_a_missing_model(tmp_path, capsys):
    slides, patches = make_cohort(tmp_path)
    argv = ["wsi", "features", "--slides", str(slides), "--patches", str(patches)]
    argv += ["--out", str(tmp_path / "out"), "--encoder", "hf_local"]
    argv += ["--encoder-path", str(tmp_path / "missing_model")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "wsi.features.encoder.path" in err and "missing_model" in err
