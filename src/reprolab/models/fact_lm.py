"""The small fact language model: a `transformers` GPT-2 built from a config and trained on the
sentences of a fact world (models.facts): the model the `nas` study edits.

Choices:

* Model: `GPT2LMHeadModel` (pre-LN blocks, GELU MLP of 4 × width, learned positions, no
  dropout): the family of the locate-and-edit papers (ROME and MEMIT edit GPT-2's
  `mlp.c_proj`), so the editors' code paths are those of a real GPT-2.
* Tokenizer: the project's word-level tokenizer (models.tiny_vlm.build_tokenizer) over the
  world's vocabulary: one token per word, `<s>` in front; an object is one token.
* Training: each step a batch of `batch_size` sentences; a share `arithmetic_share` of them
  are arithmetic, the rest fact statements (a random subject and relation, one of the subject's
  trained templates, 0 to `prefix_max` fillers), all drawn from a generator of the seed. The
  loss is the language-model loss on every token but padding. AdamW, linear warm-up over the
  first 5 % of steps then cosine decay to a tenth.
* Evaluation (`fact_accuracy`): the share of queries whose most likely next token is the
  fact's object.

Measured (one thread, a second job beside it): at the nas card's size (300 subjects, 4
relations, 16 objects, up to 3 fillers, the paraphrase trained for half the subjects), 4 blocks
64 wide, 2500 steps of 64 sentences at lr 0.003 reach 100 % on the trained templates and 99.7 %
on the held-out paraphrase in 87 s; 128 wide at lr 0.002, 99.9 % and 98.5 % in 193 s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import atomic_dir, write_json
from reprolab.models.facts import (
    PARAPHRASE,
    World,
    arithmetic,
    prefix,
    query,
    statement,
    trained_templates,
)
from reprolab.models.tiny_vlm import build_tokenizer
from reprolab.models.training import train_steps

IGNORE = -100
TRAINING_RECORD = "training.json"
SPEC_KEYS = ("layers", "hidden", "heads", "context", "lr", "batch_size", "arithmetic_share")


def fact_tokenizer(world: World) -> PreTrainedTokenizerFast:
    """The word-level tokenizer of the world's vocabulary."""
    return build_tokenizer(world.vocabulary())


def build_model(spec: Mapping[str, Any], tokenizer: PreTrainedTokenizerFast) -> GPT2LMHeadModel:
    """A freshly initialised GPT-2 of the spec's size (from torch's generator: seed it first)."""
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=int(spec["context"]),
        n_embd=int(spec["hidden"]),
        n_layer=int(spec["layers"]),
        n_head=int(spec["heads"]),
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return GPT2LMHeadModel(config)


def training_sentences(
    world: World, count: int, share: float, rng: np.random.Generator
) -> list[str]:
    """`count` sentences: arithmetic with probability `share`, else a fact statement under a
    trained template with a random opening."""
    sentences = []
    for _ in range(count):
        if rng.random() < share:
            sentences.append(arithmetic(rng))
            continue
        subject = int(rng.integers(len(world.subjects)))
        relation = int(rng.integers(len(world.relations)))
        templates = trained_templates(world, subject)
        template = templates[int(rng.integers(len(templates)))]
        opening = prefix(rng, world.spec.prefix_max)
        sentences.append(statement(world, subject, relation, template, opening))
    return sentences


def encode(
    tokenizer: PreTrainedTokenizerFast, texts: Sequence[str], context: int
) -> dict[str, torch.Tensor]:
    """A right-padded batch with labels (IGNORE on padding); ValueError past `context`."""
    batch = tokenizer(list(texts), padding=True, return_tensors="pt")
    if batch["input_ids"].shape[1] > context:
        raise ValueError(
            f"a sentence is {batch['input_ids'].shape[1]} tokens, over the context {context}"
        )
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, IGNORE)
    return {
        "input_ids": batch["input_ids"],
        "attention_mask": batch["attention_mask"],
        "labels": labels,
    }


@torch.no_grad()
def next_token_logits(
    model: GPT2LMHeadModel,
    tokenizer: PreTrainedTokenizerFast,
    texts: Sequence[str],
    batch_size: int = 256,
) -> torch.Tensor:
    """The logits of the token after each text (its last real position), one row per text."""
    model.eval()
    rows = []
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(
            list(texts[start : start + batch_size]), padding=True, return_tensors="pt"
        )
        logits = model(**batch).logits
        last = batch["attention_mask"].sum(dim=1) - 1
        rows.append(logits[torch.arange(logits.shape[0]), last])
    return torch.cat(rows)


def object_ids(tokenizer: PreTrainedTokenizerFast, words: Sequence[str]) -> list[int]:
    """The token of each object word as it follows a space (how it comes after a query)."""
    ids = []
    for word in words:
        tokens = tokenizer(f"x {word}", add_special_tokens=False).input_ids
        ids.append(tokens[-1])
    return ids


def fact_accuracy(
    model: GPT2LMHeadModel,
    tokenizer: PreTrainedTokenizerFast,
    world: World,
    queries: Sequence[tuple[int, int, int]],
    openings: Sequence[Sequence[str]] | None = None,
) -> float:
    """The share of (subject, relation, template) queries whose most likely next token is the
    fact's object (openings: one per query, none by default)."""
    openings = openings or [()] * len(queries)
    texts = [query(world, s, r, t, o) for (s, r, t), o in zip(queries, openings, strict=True)]
    answers = object_ids(tokenizer, [world.object_of(s, r) for s, r, _ in queries])
    predicted = next_token_logits(model, tokenizer, texts).argmax(dim=1).tolist()
    return sum(p == a for p, a in zip(predicted, answers, strict=True)) / len(queries)


def evaluation_queries(world: World) -> dict[str, list[tuple[int, int, int]]]:
    """The queries the record reports: every fact under every trained template (`trained`),
    and under the paraphrase for subjects that never saw it (`paraphrase`)."""
    trained, paraphrase = [], []
    for s in range(len(world.subjects)):
        for r in range(len(world.relations)):
            trained += [(s, r, t) for t in trained_templates(world, s)]
            if s not in world.paraphrase_trained:
                paraphrase.append((s, r, PARAPHRASE))
    return {"trained": trained, "paraphrase": paraphrase}


def train_fact_lm(
    world: World,
    spec: Mapping[str, Any],
    steps: int,
    seed: int,
    folder: str | Path,
    threads: int,
    log_every: int = 50,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Train the fact LM for `steps` steps; save model, tokenizer and the training record into
    `folder` (replaced whole, atomically). The record holds the loss of each window of
    `log_every` steps and the final fact accuracies (trained templates; held-out paraphrase)."""
    missing = sorted(set(SPEC_KEYS) - set(spec))
    if missing:
        raise ValueError(f"fact LM spec: missing {missing}")
    seed_everything(seed, threads)
    tokenizer = fact_tokenizer(world)
    model = build_model(spec, tokenizer)
    rng = np.random.default_rng(derive_seed(seed, "facts", "training"))
    size, share, context = (
        int(spec["batch_size"]),
        float(spec["arithmetic_share"]),
        int(spec["context"]),
    )
    losses = train_steps(
        model,
        lambda: encode(tokenizer, training_sentences(world, size, share, rng), context),
        steps,
        float(spec["lr"]),
        log_every,
        "fact LM",
        show_progress,
    )
    queries = evaluation_queries(world)
    record = {
        "spec": dict(spec),
        "steps": steps,
        "seed": seed,
        "parameters": sum(p.numel() for p in model.parameters()),
        "log_every": log_every,
        "losses": losses,
        "accuracy": {
            name: fact_accuracy(model, tokenizer, world, found) for name, found in queries.items()
        },
    }
    with atomic_dir(folder) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        write_json(tmp / TRAINING_RECORD, record)
    return record
