"""What several overcorrection test modules share: a prior, a shifted world's trials, chosen
orders, a linear reader that is its own memory, and tiny causal LM folders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from reprolab.core.determinism import seed_everything
from reprolab.models.tiny_vlm import build_tokenizer
from reprolab.studies.overcorrection.icl_data import draw_prior, shifted_trials, shifted_world
from reprolab.studies.overcorrection.readers import LinearAttentionReader

PRIOR = draw_prior(np.random.default_rng(0))
TRIALS = shifted_trials(
    np.random.default_rng(2), shifted_world(np.random.default_rng(1), PRIOR, 1.5), 5, pool=20
)
ORDERS = np.stack([np.random.default_rng(i).permutation(20)[:6] for i in range(5)])


def own_memory_reader(eta: float) -> LinearAttentionReader:
    """A linear reader whose values are W_V z = η (y − A x): its correction is η Σ ⟨k, q⟩ r_k
    with r_k the residual against its own empty-context answer A x."""
    seed_everything(0, 1)
    reader = LinearAttentionReader()
    with torch.no_grad():
        reader.w_value.copy_(eta * torch.cat([-reader.skip, torch.eye(4)], 1))
    return reader


def save_tiny_lm(folder: Path, family: str, words: list[str]) -> Path:
    """A two-layer causal LM of `family` (llama: grouped-query with rotary embeddings; gpt2),
    initialised from seed 0, saved to `folder` with a word-level tokenizer of `words`."""
    tokenizer = build_tokenizer(words)
    seed_everything(0, 1)
    if family == "llama":
        config = LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=512,
        )
        model = LlamaForCausalLM(config)
    else:
        config = GPT2Config(
            vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=512
        )
        model = GPT2LMHeadModel(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
