"""A tiny VisArith stream and a tiny LLaVA policy for hiccr's tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reprolab.models.tiny_vlm import BOS, IMAGE, PAD, UNK, build_tiny_llava, build_tokenizer
from reprolab.preprocess.instr.stream import load_stream
from reprolab.preprocess.instr.visarith import VisArithSpec, build_visarith, vocabulary
from reprolab.studies.hiccr.data import Splits, answer_ids, load_visarith, prompt_ids
from reprolab.studies.hiccr.policy import VisionPolicy

SPEC = {
    "seed": 0,
    "noise": 10.0,
    "stroke_gain": [0.7, 1.0],
    "tasks": [{"name": "sft", "train": 24, "test": 6}, {"name": "rl", "train": 8, "test": 10}],
}


@pytest.fixture(scope="package")
def stream_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_visarith(VisArithSpec.from_params(SPEC), tmp_path_factory.mktemp("visarith"))


@pytest.fixture(scope="package")
def visarith(stream_path: Path) -> Splits:
    return load_visarith(load_stream(stream_path))


@pytest.fixture(scope="package")
def tokenizer():
    return build_tokenizer(vocabulary(VisArithSpec.from_params(SPEC)))


def make_policy(tokenizer, seed: int = 0) -> VisionPolicy:
    """A fresh tiny policy (hidden 32, 2 layers, eager attention) for VisArith prompts."""
    model, _ = build_tiny_llava(
        tokenizer, seed=seed, image_size=16, patch_size=8, hidden=32, layers=2, heads=2
    )
    model.set_attn_implementation("eager")
    banned = tokenizer.convert_tokens_to_ids([PAD, BOS, UNK, IMAGE])
    length = answer_ids(tokenizer, ["see 1 2 3 4 , 1 + 2 = 3 , 3 + 3 = 6 , 6 + 4 = 0 , so 0"])
    return VisionPolicy(
        model, prompt_ids(tokenizer, 4), length.shape[1], tokenizer.eos_token_id, banned
    )


@pytest.fixture
def policy(tokenizer, torch_one_thread) -> VisionPolicy:
    torch.manual_seed(0)
    return make_policy(tokenizer)
