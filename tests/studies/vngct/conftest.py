"""A tiny SynthCIT stream and tiny LLaVA adapters for the vngct tests.

`stream` is a two-task SynthCIT stream (a visual `position` task, then a text-only `arith`
task, plus a few alignment captions) built once per session with the real generator and loaded
through `load_stream_data` with a tiny LLaVA processor (`processor`: word-level tokenizer of
the stream's words, pixel values in [-1, 1], as the alignment job builds it; `load_data` loads
another stream.yaml with it); tests must not modify it. `make_adapter(seed)` builds a fresh
`MLLMAdapter` over a real `LlavaForConditionalGeneration` (16×16 images, 4×4 patches, so 16
image tokens; hidden 32, one layer), seeded entirely by `seed`: the calibration MLP's first
layer, which the adapter draws from torch's global RNG, is drawn under a forked, seeded RNG, so
two calls with one seed give bit-identical adapters. `aligned` is the stream's tiny model
aligned with `specs.PARAMS` and saved as the align rule saves it: (folder, summary).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from reprolab.models.tiny_vlm import build_tiny_llava, build_tokenizer
from reprolab.preprocess.instr.stream import load_stream
from reprolab.preprocess.instr.synthcit import SynthCITSpec, build_synthcit
from reprolab.studies.vngct.adapter import MLLMAdapter
from reprolab.studies.vngct.data import StreamData, load_stream_data, stream_vocabulary
from reprolab.studies.vngct.jobs import TINY_PIXEL_MEAN_STD, align_model
from tests.studies.vngct.specs import PARAMS

IMAGE_SIZE, PATCH = 16, 4
TOKENS_PER_IMAGE = (IMAGE_SIZE // PATCH) ** 2
SPEC = {
    "seed": 1,
    "noise": 10.0,
    "stroke_gain": [0.7, 1.0],
    "align": {"kind": "caption", "n": 4},
    "tasks": [
        {"name": "where", "kind": "position", "train": 64, "test": 16},
        {"name": "plus", "kind": "arith", "train": 16, "test": 8},
    ],
}


@pytest.fixture(scope="session")
def stream_yaml(tmp_path_factory):
    """The tiny stream's stream.yaml, built once."""
    return build_synthcit(SynthCITSpec.from_params(SPEC), tmp_path_factory.mktemp("synthcit"))


def tiny_processor(stream_yaml):
    """A tiny LLaVA processor for the stream of `stream_yaml`, as the alignment job builds it."""
    tokenizer = build_tokenizer(stream_vocabulary(load_stream(stream_yaml)))
    _, processor = build_tiny_llava(
        tokenizer,
        0,
        IMAGE_SIZE,
        PATCH,
        hidden=8,
        layers=1,
        heads=1,
        pixel_mean_std=TINY_PIXEL_MEAN_STD,
    )
    return processor


@pytest.fixture(scope="session")
def processor(stream_yaml):
    """The tiny stream's processor."""
    return tiny_processor(stream_yaml)


@pytest.fixture(scope="session")
def load_data(processor) -> Callable[..., StreamData]:
    """Load a stream.yaml into tensors with the tiny processor."""

    def load(path, tokens_per_image: int = TOKENS_PER_IMAGE) -> StreamData:
        return load_stream_data(load_stream(path), processor, tokens_per_image)

    return load


@pytest.fixture(scope="session")
def stream(stream_yaml, load_data) -> StreamData:
    """The tiny stream loaded into tensors."""
    return load_data(stream_yaml)


@pytest.fixture(scope="session")
def make_adapter(stream) -> Callable[[int], MLLMAdapter]:
    """A factory of fresh tiny adapters, bit-identical for one seed."""

    def make(seed: int = 0) -> MLLMAdapter:
        model, _ = build_tiny_llava(
            stream.tokenizer, seed, IMAGE_SIZE, PATCH, hidden=32, layers=1, heads=2
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return MLLMAdapter(model, calibration_width=8)

    return make


@pytest.fixture(scope="session")
def aligned(stream_yaml, tmp_path_factory):
    """The tiny model aligned and saved as the align rule saves it: (folder, summary)."""
    folder = tmp_path_factory.mktemp("align") / "seed0"
    summary = align_model(stream_yaml, PARAMS, 1, folder)
    return folder, summary
