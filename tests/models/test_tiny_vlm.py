"""Tiny LLaVA: offline tokenizer, seeded weights, image-token expansion, save/load round-trip."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoProcessor, LlavaForConditionalGeneration

from reprolab.core.io import recover_dir
from reprolab.models.tiny_vlm import (
    IMAGE,
    SPECIAL_TOKENS,
    build_tiny_llava,
    build_tokenizer,
    save_tiny_vlm,
    tiny_llava_config,
    tokens_per_image,
)

pytestmark = pytest.mark.usefixtures("torch_one_thread")

WORDS = ["red", "square", "top-left", "circle", "collision", "is the", "after"]
PROMPT = "Video: <image><image>\nQuestion: which red square? A. circle B. <image>\nAnswer:"


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer(WORDS)


@pytest.fixture(scope="module")
def tiny(tokenizer):
    return build_tiny_llava(tokenizer, seed=3)


def _images(n: int, size: int = 32) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(n)]


def test_tokenizer_round_trips_a_sentence_with_the_words(tokenizer):
    sentence = "is the red square top-left? A. circle, after collision 12!\nB. 7"
    ids = tokenizer(sentence).input_ids
    assert ids[0] == tokenizer.bos_token_id and tokenizer.unk_token_id not in ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == sentence
    assert "▁square" in tokenizer.convert_ids_to_tokens(ids)


def test_tokenizer_special_tokens_and_unknown_words(tokenizer):
    assert [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert tokenizer.pad_token_id == 0 and tokenizer.eos_token_id == 2
    assert tokenizer.image_token == IMAGE
    ids = tokenizer("A <image><image> triangle", add_special_tokens=False).input_ids
    assert ids.count(4) == 2 and tokenizer.unk_token_id in ids


def test_tokenizer_is_deterministic_and_rejects_non_strings(tokenizer):
    assert build_tokenizer(WORDS).get_vocab() == tokenizer.get_vocab()
    with pytest.raises(TypeError, match="must hold strings"):
        build_tokenizer(["red", 3])


def test_same_seed_same_weights_different_seed_different(tokenizer, tiny):
    model, _ = tiny
    state = model.state_dict()
    again = build_tiny_llava(tokenizer, seed=3)[0].state_dict()
    other = build_tiny_llava(tokenizer, seed=4)[0].state_dict()
    assert all(torch.equal(state[k], again[k]) for k in state)
    assert not all(torch.equal(state[k], other[k]) for k in state)


def test_building_leaves_the_global_rng_alone(tokenizer):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_tiny_llava(tokenizer, seed=5)
    assert torch.equal(torch.rand(3), expected)


def test_processor_expands_each_image_into_the_vision_towers_token_count(tiny):
    model, processor = tiny
    per_image = tokens_per_image(model.config)
    inputs = processor(images=_images(3), text=PROMPT, return_tensors="pt")
    with torch.inference_mode():
        patches = model.model.vision_tower(inputs["pixel_values"]).last_hidden_state
        logits = model(**inputs).logits
    assert per_image == patches.shape[1] - 1  # the "default" strategy drops the CLS token
    assert (inputs["input_ids"] == model.config.image_token_id).sum() == 3 * per_image
    assert logits.shape == (1, inputs["input_ids"].shape[1], model.config.text_config.vocab_size)


def test_save_load_round_trip_gives_identical_logits(tiny, tmp_path, no_network):
    model, processor = tiny
    folder = save_tiny_vlm(model, processor, tmp_path / "tiny")
    save_tiny_vlm(model, processor, folder)  # replacing an existing folder works
    loaded = LlavaForConditionalGeneration.from_pretrained(folder, local_files_only=True).eval()
    loaded_processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
    inputs = processor(images=_images(3), text=PROMPT, return_tensors="pt")
    reloaded = loaded_processor(images=_images(3), text=PROMPT, return_tensors="pt")
    assert all(torch.equal(inputs[k], reloaded[k]) for k in inputs)
    with torch.inference_mode():
        assert torch.equal(model(**inputs).logits, loaded(**reloaded).logits)
    assert [p.name for p in tmp_path.iterdir()] == ["tiny"]


def _weights_of(folder: Path) -> dict[str, torch.Tensor]:
    model = LlavaForConditionalGeneration.from_pretrained(folder, local_files_only=True)
    return model.state_dict()


def _assert_holds(folder: Path, model: LlavaForConditionalGeneration) -> None:
    """`folder` loads, with exactly the weights of `model`."""
    expected = model.state_dict()
    loaded = _weights_of(folder)
    assert loaded.keys() == expected.keys()
    assert all(torch.equal(loaded[k], expected[k]) for k in loaded)


@pytest.mark.parametrize("crash", [False, True], ids=["error", "crash"])
def test_a_save_cut_off_at_the_swap_keeps_the_old_model(
    tokenizer, tiny, tmp_path, monkeypatch, crash
):
    """Replacing a saved model fails at the rename that moves the new folder in. On an error
    the old folder is put back at once; on a crash (putting it back fails too) it waits aside
    and `recover_dir` puts it back. Either way the old model loads, whole."""
    old_model, processor = tiny
    folder = save_tiny_vlm(old_model, processor, tmp_path / "tiny")
    new_model, _ = build_tiny_llava(tokenizer, seed=4)
    real = os.rename

    def rename(src, dst):
        if Path(dst) == folder and (Path(src).name.endswith(".tmp") or crash):
            raise OSError(f"simulated failure renaming {src} -> {dst}")
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OSError, match="simulated failure"):
        save_tiny_vlm(new_model, processor, folder)
    monkeypatch.undo()
    assert folder.exists() != crash
    recover_dir(folder)
    _assert_holds(folder, old_model)
    assert [p.name for p in tmp_path.iterdir()] == ["tiny"]
    save_tiny_vlm(new_model, processor, folder)
    _assert_holds(folder, new_model)


def test_same_seed_saves_byte_identical_folders(tokenizer, tiny, tmp_path):
    first = save_tiny_vlm(*tiny, tmp_path / "first")
    second = save_tiny_vlm(*build_tiny_llava(build_tokenizer(WORDS), seed=3), tmp_path / "second")
    names = sorted(p.name for p in first.iterdir())
    assert "model.safetensors" in names and names == sorted(p.name for p in second.iterdir())
    assert all((first / n).read_bytes() == (second / n).read_bytes() for n in names)


def test_config_rejects_inconsistent_sizes():
    with pytest.raises(ValueError, match="multiple of patch_size"):
        tiny_llava_config(100, image_size=30, patch_size=8)
    with pytest.raises(ValueError, match="multiple of heads"):
        tiny_llava_config(100, hidden=30, heads=4)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tiny_llava_config(4, image_token_id=4)
