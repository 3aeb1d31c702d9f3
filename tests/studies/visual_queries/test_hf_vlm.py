"""hf_vlm: the interleaved prompt, image-token counts and letter scoring on a real tiny LLaVA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.models.tiny_vlm import build_tiny_llava, build_tokenizer, save_tiny_vlm
from reprolab.models.tiny_vlm import tokens_per_image as tiny_tokens_per_image
from reprolab.studies.visual_queries.hf_vlm import HFVideoQA, build_prompt

pytestmark = pytest.mark.usefixtures("torch_one_thread")

WORDS = ["which", "scene", "comes", "after", "red", "blue", "square", "circle", "hits"]
QUESTION = "which scene comes after red hits blue?"
TEXT_OPTIONS = ["red square 3", "blue circle 5", "red circle 1", "blue square 8"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    model, processor = build_tiny_llava(build_tokenizer(WORDS), seed=0)
    return save_tiny_vlm(model, processor, tmp_path_factory.mktemp("vlm") / "tiny_llava")


@pytest.fixture(scope="module")
def qa(folder):
    return HFVideoQA.from_pretrained(folder)


def _frames(n: int, height: int = 32, width: int = 32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, height, width, 3), dtype=np.uint8)


def _image_tokens(qa: HFVideoQA, prompt: str, images: list[np.ndarray]) -> int:
    inputs = qa.processor(images=images, text=prompt, return_tensors="pt")
    return int((inputs["input_ids"] == qa.model.config.image_token_id).sum())


def test_visual_prompt_interleaves_frames_then_image_options(qa):
    frames, options = _frames(4), list(_frames(4, seed=1))
    prompt, images = build_prompt(QUESTION, options, frames)
    assert len(images) == 8 and prompt.count("<image>") == 8
    assert all(np.array_equal(a, b) for a, b in zip(images, [*frames, *options], strict=True))
    assert prompt.splitlines() == [
        "Video: " + "<image>" * 4,
        f"Question: {QUESTION}",
        "A. <image>",
        "B. <image>",
        "C. <image>",
        "D. <image>",
        "Answer:",
    ]
    assert _image_tokens(qa, prompt, images) == 8 * tiny_tokens_per_image(qa.model.config)


def test_text_prompt_has_only_the_frames_as_images(qa):
    prompt, images = build_prompt(QUESTION, TEXT_OPTIONS, _frames(4))
    assert len(images) == 4 and "B. blue circle 5" in prompt.splitlines()
    assert _image_tokens(qa, prompt, images) == 4 * tiny_tokens_per_image(qa.model.config)


def test_mixed_options_keep_their_places():
    image = _frames(1, seed=2)[0]
    prompt, images = build_prompt(QUESTION, ["red square 3", image, "blue circle 5"], _frames(2))
    assert prompt.splitlines()[2:5] == ["A. red square 3", "B. <image>", "C. blue circle 5"]
    assert len(images) == 3 and np.array_equal(images[2], image)


def test_score_gives_finite_log_probs_and_answer_is_their_argmax(qa, no_network):
    frames = _frames(4, height=48, width=64)  # resized and centre-cropped by the processor
    for options in (TEXT_OPTIONS, list(_frames(4, seed=3))):
        scores = qa.score(frames, QUESTION, options)
        assert scores.shape == (4,) and scores.dtype == np.float64
        assert np.isfinite(scores).all() and (scores < 0).all()
        assert np.array_equal(scores, qa.score(frames, QUESTION, options))
        assert qa.answer(frames, QUESTION, options) == int(np.argmax(scores))
        assert qa.answer(frames, QUESTION, options) in range(4)


def test_letter_tokens_are_the_spaced_letters(qa):
    prompt, _ = build_prompt(QUESTION, TEXT_OPTIONS, _frames(1))
    tokenizer = qa.processor.tokenizer
    assert qa.letter_token_ids(prompt, 4) == tokenizer.convert_tokens_to_ids(
        ["▁A", "▁B", "▁C", "▁D"]
    )


def test_loading_is_local_and_honours_dtype(folder, no_network):
    qa16 = HFVideoQA.from_pretrained(folder, device="cpu", dtype="bfloat16")
    assert qa16.model.dtype == torch.bfloat16
    assert np.isfinite(qa16.score(_frames(2), QUESTION, TEXT_OPTIONS)).all()
    with pytest.raises(ValueError, match="dtype must be one of"):
        HFVideoQA.from_pretrained(folder, dtype="float64")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        HFVideoQA.from_pretrained(folder / "missing")


def test_bad_items_get_clear_errors():
    frames = _frames(2)
    with pytest.raises(ValueError, match="frames must be"):
        build_prompt(QUESTION, TEXT_OPTIONS, frames[0])
    with pytest.raises(ValueError, match="each frame must be a uint8"):
        build_prompt(QUESTION, TEXT_OPTIONS, frames.astype(np.float32))
    with pytest.raises(ValueError, match="option C must be a uint8"):
        build_prompt(QUESTION, ["a", "b", frames[0, :, :, :2]], frames)
    with pytest.raises(TypeError, match="option B must be str or np.ndarray"):
        build_prompt(QUESTION, ["a", 3], frames)
    with pytest.raises(ValueError, match="2 to 26 options"):
        build_prompt(QUESTION, ["a"], frames)
    with pytest.raises(ValueError, match="option A contains the image placeholder"):
        build_prompt(QUESTION, ["<image>", "b"], frames)
