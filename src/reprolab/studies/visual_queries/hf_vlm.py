"""The `hf_vlm` backend: a `transformers` vision-language model answering an item by letter.

An item (video frames, question, options) becomes one interleaved prompt (`build_prompt`):

    Video: <image><image>...<image>        one placeholder per frame
    Question: <question>
    A. <text option>                        a text option is written inline,
    B. <image>                              an image option is a placeholder in its place
    ...
    Answer:

and the images in placeholder order (the frames, then the image options). `HFVideoQA.score`
runs one forward pass over it and reads the log-probability of each option letter (" A",
" B", ...) as the next token; `answer` is the argmax (ties → the lowest index).

Choices:

* Plain text prompt, no chat template, so the same prompt reaches every model; instruction-
  tuned models are scored on a raw completion.
* The letter's token is found by tokenizing the prompt with and without ``" " + letter`` and
  taking the first token that differs, so word-level, BPE and SentencePiece tokenizers all
  work; a tokenizer that cannot give each letter its own first token is an error.
* The placeholder is the processor's ``image_token`` unless one is passed. That is right for
  the LLaVA family (``<image>``, which `LlavaProcessor` expands into the vision tower's number
  of image tokens). Other families need their own placeholder: Qwen2-VL / Qwen2.5-VL expect
  ``<|vision_start|><|image_pad|><|vision_end|>`` (their processor's ``image_token`` is only the
  middle part; pass the whole string as `image_token`), and LLaVA-OneVision expands
  ``<image>`` into a size-dependent count (its processor handles that). Only the LLaVA family
  is tested here: the Qwen2-VL and LLaVA-OneVision processors need torchvision (for their
  video processors), which is not a dependency of reprolab.
* Model and processor load from a local folder only (``local_files_only=True``); the model
  class comes from `AutoModelForImageTextToText`, the processor from `AutoProcessor`.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForImageTextToText, AutoProcessor, PreTrainedModel, ProcessorMixin

from reprolab.core.determinism import resolve_device

ANSWER_CUE = "Answer:"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _check_image(image: np.ndarray, what: str) -> None:
    """Raise unless `image` is a uint8 RGB array [H, W, 3]."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(
            f"{what} must be a uint8 array [H, W, 3], got {image.dtype} {list(image.shape)}"
        )


def build_prompt(
    question: str,
    options: Sequence[str | np.ndarray],
    frames: np.ndarray,
    image_token: str = "<image>",
) -> tuple[str, list[np.ndarray]]:
    """The interleaved prompt text and its images (frames first, then image options).

    `frames` is uint8 [T, H, W, 3]; each option is a text string or a uint8 [H, W, 3] image.
    """
    frames = np.asarray(frames)
    if frames.ndim != 4 or len(frames) == 0:
        raise ValueError(f"frames must be a uint8 array [T, H, W, 3], got {list(frames.shape)}")
    _check_image(frames[0], "each frame")
    if not 2 <= len(options) <= len(string.ascii_uppercase):
        raise ValueError(f"an item needs 2 to 26 options, got {len(options)}")
    if image_token in question:
        raise ValueError(f"the question contains the image placeholder {image_token!r}")
    images = list(frames)
    lines = [f"Video: {image_token * len(frames)}", f"Question: {question}"]
    for letter, option in zip(string.ascii_uppercase, options, strict=False):
        if isinstance(option, str):
            if image_token in option:
                raise ValueError(f"option {letter} contains the image placeholder {image_token!r}")
            lines.append(f"{letter}. {option}")
        elif isinstance(option, np.ndarray):
            _check_image(option, f"option {letter}")
            images.append(option)
            lines.append(f"{letter}. {image_token}")
        else:
            raise TypeError(
                f"option {letter} must be str or np.ndarray, got {type(option).__name__}"
            )
    lines.append(ANSWER_CUE)
    return "\n".join(lines), images


class HFVideoQA:
    """A transformers vision-language model that answers multiple-choice video items by letter."""

    def __init__(
        self, model: PreTrainedModel, processor: ProcessorMixin, image_token: str | None = None
    ) -> None:
        """Wrap a loaded model and its processor; `image_token` defaults to the processor's."""
        placeholder = image_token or getattr(processor, "image_token", None)
        if not placeholder:
            raise ValueError(
                f"{type(processor).__name__} has no image_token; pass image_token explicitly"
            )
        self.model = model.eval()
        self.processor = processor
        self.image_token = placeholder

    @classmethod
    def from_pretrained(
        cls,
        folder: str | Path,
        device: str = "cpu",
        dtype: str = "float32",
        image_token: str | None = None,
    ) -> HFVideoQA:
        """Load model and processor from a local folder (never the hub) onto `device`.

        `device` is a torch device name or ``auto`` (CUDA when present); `dtype` is one of
        ``float32``, ``bfloat16``, ``float16``.
        """
        folder = Path(folder)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"{folder} is not a saved model folder (no config.json)")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
        processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
        model = AutoModelForImageTextToText.from_pretrained(
            folder, dtype=DTYPES[dtype], local_files_only=True
        )
        return cls(model.to(resolve_device(device)), processor, image_token)

    def letter_token_ids(self, prompt: str, n_options: int) -> list[int]:
        """The id of the first token of ``" " + letter`` after `prompt`, per option letter."""
        tokenizer = self.processor.tokenizer
        base = tokenizer(prompt, add_special_tokens=False).input_ids
        ids = []
        for letter in string.ascii_uppercase[:n_options]:
            full = tokenizer(f"{prompt} {letter}", add_special_tokens=False).input_ids
            if len(full) <= len(base) or full[: len(base)] != base:
                raise ValueError(f"the tokenizer merges ' {letter}' into the end of the prompt")
            ids.append(full[len(base)])
        if len(set(ids)) != len(ids):
            raise ValueError(f"option letters share first tokens {ids}; cannot score by letter")
        return ids

    def score(
        self, frames: np.ndarray, question: str, options: Sequence[str | np.ndarray]
    ) -> np.ndarray:
        """Log-probability (float64 [n_options]) of each option letter as the next token."""
        prompt, images = build_prompt(question, options, frames, self.image_token)
        inputs = self.processor(images=images, text=prompt, return_tensors="pt")
        inputs = {
            key: value.to(self.model.device, self.model.dtype)
            if value.is_floating_point()
            else value.to(self.model.device)
            for key, value in inputs.items()
        }
        with torch.inference_mode():
            logits = self.model(**inputs).logits[0, -1].float()
        log_probs = torch.log_softmax(logits, dim=-1)
        ids = self.letter_token_ids(prompt, len(options))
        return log_probs[ids].cpu().numpy().astype(np.float64)

    def answer(self, frames: np.ndarray, question: str, options: Sequence[str | np.ndarray]) -> int:
        """The index of the most likely option letter (ties → the lowest index)."""
        return int(np.argmax(self.score(frames, question, options)))
