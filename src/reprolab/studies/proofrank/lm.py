"""Small chat language models trained in the workflow on the corpus, at several budgets.

proofrank scores proof generators; at smoke scale its "models" are trained here on the corpus's
own proofs for different numbers of steps, so that, like real models, they differ in quality: a
small budget writes proof-like text, a large one reproduces the corpus's proofs often. They are
ordinary `transformers` causal LMs saved with `save_pretrained`, so the backend that runs them
(studies.proofrank.hf_backend) runs paper-scale chat models from their folders unchanged.

Choices:

* One prompt (`prompt_messages`): a single user message asking for a proof of the statement,
  by a technique where one is asked for, in the corpus's format (formulas between dollar
  signs in ASCII math, ending "This completes the proof."). Tiny and paper-scale models get
  the same messages; each tokenizer's chat template turns them into its own prompt.
* Tokenizer: byte-level BPE (`tokenizers`), trained on the prompts' contents and the proofs,
  no normaliser, so decoding gives back any text byte for byte. Its special tokens are
  ``<|pad|> <|end|> <|system|> <|user|> <|assistant|>`` (ids 0-4); ``<|end|>`` closes a message
  and is the eos token. The chat template writes each message as ``<|role|>\\n content
  <|end|>\\n`` and the generation prompt as ``<|assistant|>\\n``. No bos token.
* Model: `LlamaForCausalLM` rather than GPT-2: it is the decoder family of the paper-scale
  models (Qwen2.5 is Llama-style: RoPE, RMSNorm, SwiGLU), so the tiny models take the same
  code paths in `generate` (rotary positions from the attention mask under left padding),
  and rotary positions have no learned table to size. MLP width 4 × hidden, tied embeddings.
* Training data: every proof of every theorem, correct and flawed (real models learn from
  imperfect text too), twice: under the free prompt and under its technique's prompt. The
  loss is on the proof tokens and the closing eos only; prompt and padding are masked.
* Optimisation: AdamW (betas 0.9/0.95, no weight decay), linear warm-up over the first 5 % of
  the steps, then cosine decay to a tenth of `lr`; gradients clipped at norm 1. Each epoch
  draws the examples in a fresh random order, batching examples of similar length together
  (`batch_order`) so that little compute goes to padding.
* Determinism: `seed_everything(seed, threads)` before the weights are initialised, the batch
  order from a generator of `derive_seed(seed, ...)`, BPE training has no randomness; the
  saved folder is byte-identical for the same inputs and thread count.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import atomic_dir, write_json
from reprolab.models.training import train_steps
from reprolab.studies.proofrank.corpus import TECHNIQUES, Theorem

TECHNIQUE_PHRASES = {
    "induction": "induction",
    "contradiction": "contradiction",
    "direct": "a direct argument",
    "pigeonhole": "the pigeonhole principle",
    "counting": "counting",
    "parity": "a parity argument",
}
"""How an instruction names each technique of corpus.TECHNIQUES ("Prove ... by <phrase>.")."""

PAD, EOS = "<|pad|>", "<|end|>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
SPECIAL_TOKENS = (PAD, EOS, *ROLE_TOKENS)
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)
"""The tiny models' chat template: ``<|role|>`` newline, content, ``<|end|>`` newline."""

DEFAULT_SPEC: dict[str, Any] = {
    "hidden": 128,
    "layers": 2,
    "heads": 4,
    "context": 640,
    "vocab_size": 1024,
    "lr": 3e-3,
    "batch_size": 2,
}
"""The smoke-scale model and optimiser (`train_lm` fills a spec's missing keys from it): 656k
parameters, about 0.05 s a step on one CPU thread. Small batches memorise the corpus in the
fewest seconds (batch 2 beat 4 and 8 at equal time; lr 2e-3 and 6e-3 did worse than 3e-3)."""

TRAINING_RECORD = "training.json"
"""The training record's file in the saved model folder."""
IGNORE = -100
"""The label `transformers` leaves out of the loss (prompt and padding tokens)."""
POOL_BATCHES = 8
"""How many batches' worth of examples are sorted by length together (`batch_order`)."""
FORMAT = (
    "Write one step per line, every formula between dollar signs in ASCII math (* for "
    'products, ^ for powers), and end with "This completes the proof."'
)


def prompt_messages(statement: str, instruction: str | None) -> list[dict[str, str]]:
    """The chat messages asking for a proof of `statement`, by the technique `instruction`
    (one of corpus.TECHNIQUES) or, when it is None, by any method."""
    if instruction is not None and instruction not in TECHNIQUE_PHRASES:
        raise ValueError(f"instruction {instruction!r} is not one of {list(TECHNIQUES)} or None")
    how = "" if instruction is None else f" by {TECHNIQUE_PHRASES[instruction]}"
    content = f"Prove the following theorem{how}.\n\nTheorem: {statement}\n\n{FORMAT}"
    return [{"role": "user", "content": content}]


def chat_prompt(tokenizer: Any, statement: str, instruction: str | None) -> str:
    """The prompt text a chat tokenizer makes of `prompt_messages`, up to where the answer
    starts; encode it with ``add_special_tokens=False`` (the template writes any bos). Templates
    with a thinking switch (Qwen3) are asked to answer without a reasoning trace; others ignore
    the switch."""
    return tokenizer.apply_chat_template(
        prompt_messages(statement, instruction),
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=False,
    )


def tokenizer_texts(theorems: Sequence[Theorem]) -> list[str]:
    """What the BPE tokenizer learns from: every prompt content (free and per technique) and
    every proof, in corpus order."""
    texts = []
    for theorem in theorems:
        for instruction in (None, *TECHNIQUES):
            texts += [m["content"] for m in prompt_messages(theorem.statement, instruction)]
        texts += [proof.text for proof in theorem.proofs]
    return texts


def build_tokenizer(
    theorems: Sequence[Theorem], vocab_size: int, context: int
) -> PreTrainedTokenizerFast:
    """A byte-level BPE chat tokenizer of (at most) `vocab_size` tokens learnt from the
    corpus (see the module docstring); `context` is its model_max_length."""
    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise ValueError(
            f"vocab_size {vocab_size}: must be at least {256 + len(SPECIAL_TOKENS)} "
            "(the 256 bytes and the special tokens)"
        )
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(tokenizer_texts(theorems), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD,
        eos_token=EOS,
        model_max_length=context,
        clean_up_tokenization_spaces=False,
    )
    tokenizer.add_special_tokens({"additional_special_tokens": list(ROLE_TOKENS)})
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def encode_example(
    tokenizer: PreTrainedTokenizerFast, statement: str, instruction: str | None, proof: str
) -> tuple[list[int], list[int]]:
    """The token ids of prompt + proof + eos and their labels: the ids themselves on the proof
    and eos, IGNORE on the prompt. The prompt is encoded alone, as at generation time."""
    prompt = tokenizer(chat_prompt(tokenizer, statement, instruction), add_special_tokens=False)
    answer = tokenizer(proof, add_special_tokens=False)
    target = [*answer.input_ids, tokenizer.eos_token_id]
    return [*prompt.input_ids, *target], [IGNORE] * len(prompt.input_ids) + target


def training_examples(
    tokenizer: PreTrainedTokenizerFast, theorems: Sequence[Theorem], context: int
) -> list[tuple[list[int], list[int]]]:
    """Every proof under the free prompt and under its technique's prompt, in corpus order;
    ValueError naming the proof when one does not fit in `context` tokens."""
    examples = []
    for theorem in theorems:
        for proof in theorem.proofs:
            for instruction in (None, proof.technique):
                ids, labels = encode_example(tokenizer, theorem.statement, instruction, proof.text)
                if len(ids) > context:
                    raise ValueError(
                        f"proof {proof.proof_id} with its prompt is {len(ids)} tokens, more than "
                        f"the spec's context {context}; raise `context`"
                    )
                examples.append((ids, labels))
    return examples


def resolve_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """`spec` over DEFAULT_SPEC; ValueError naming an unknown key or a bad value."""
    unknown = sorted(set(spec) - set(DEFAULT_SPEC))
    if unknown:
        raise ValueError(f"LM spec: unknown key(s) {unknown}; known: {sorted(DEFAULT_SPEC)}")
    merged = {**DEFAULT_SPEC, **spec}
    for key in ("hidden", "layers", "heads", "context", "vocab_size", "batch_size"):
        if not isinstance(merged[key], int) or merged[key] < 1:
            raise ValueError(f"LM spec: {key} must be a positive integer, got {merged[key]!r}")
    if merged["hidden"] % merged["heads"]:
        raise ValueError(
            f"LM spec: hidden {merged['hidden']} is not a multiple of heads {merged['heads']}"
        )
    if not merged["lr"] > 0:
        raise ValueError(f"LM spec: lr must be positive, got {merged['lr']!r}")
    return merged


def build_model(spec: Mapping[str, Any], tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    """A freshly initialised Llama causal LM of the spec's size over the tokenizer's vocabulary
    (initialised from torch's global generator: seed it first)."""
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec["hidden"],
        intermediate_size=4 * spec["hidden"],
        num_hidden_layers=spec["layers"],
        num_attention_heads=spec["heads"],
        num_key_value_heads=spec["heads"],
        max_position_embeddings=spec["context"],
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = None
    return model


def collate(
    examples: Sequence[tuple[list[int], list[int]]], pad_id: int
) -> dict[str, torch.Tensor]:
    """A right-padded batch: input_ids, attention_mask and labels (IGNORE on padding)."""
    width = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, (tokens, targets) in enumerate(examples):
        ids[row, : len(tokens)] = torch.tensor(tokens)
        labels[row, : len(targets)] = torch.tensor(targets)
        mask[row, : len(tokens)] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def batch_order(
    lengths: Sequence[int], batch_size: int, steps: int, seed: int
) -> Iterator[list[int]]:
    """`steps` batches of example indices, epoch after epoch.

    Each epoch takes a fresh permutation of the examples (dropping the few that do not fill a
    last batch), sorts each pool of POOL_BATCHES batches' worth by length so that a batch is
    padded little, cuts the pools into batches and yields them in a random order.
    """
    rng = np.random.default_rng(derive_seed(seed, "proofrank-lm", "batches"))
    size = min(batch_size, len(lengths))
    pool = size * POOL_BATCHES
    emitted = 0
    while True:
        order = rng.permutation(len(lengths))[: len(lengths) - len(lengths) % size]
        batches = []
        for start in range(0, len(order), pool):
            chunk = sorted(order[start : start + pool].tolist(), key=lambda i: lengths[i])
            batches += [chunk[k : k + size] for k in range(0, len(chunk), size)]
        for index in rng.permutation(len(batches)):
            if emitted == steps:
                return
            yield batches[index]
            emitted += 1


@torch.no_grad()
def mean_loss(
    model: LlamaForCausalLM,
    examples: Sequence[tuple[list[int], list[int]]],
    batch_size: int,
    pad_id: int,
) -> float:
    """The cross-entropy per label token (proof tokens and eos) over `examples`."""
    model.eval()
    total, tokens = 0.0, 0
    for start in range(0, len(examples), batch_size):
        batch = collate(examples[start : start + batch_size], pad_id)
        count = int((batch["labels"][:, 1:] != IGNORE).sum())
        total += float(model(**batch).loss) * count
        tokens += count
    return total / tokens


def train_lm(
    theorems: Sequence[Theorem],
    spec: Mapping[str, Any],
    steps: int,
    seed: int,
    folder: str | Path,
    threads: int,
    log_every: int = 10,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Train a tiny chat LM on the corpus for `steps` steps and save model, tokenizer and the
    training record (TRAINING_RECORD) into `folder` (replaced whole, atomically: built in a
    sibling folder and renamed).

    Returns the training record: the resolved spec, steps, seed, parameter count, vocabulary
    size, number of examples, the mean training loss of each window of `log_every` steps
    (`losses`) and `final_loss`, the loss per proof token over all the examples after training.
    """
    if steps < 1 or log_every < 1:
        raise ValueError(f"steps ({steps}) and log_every ({log_every}) must be positive")
    if not theorems:
        raise ValueError("train_lm needs at least one theorem to learn from")
    spec = resolve_spec(spec)
    seed_everything(seed, threads)
    tokenizer = build_tokenizer(theorems, spec["vocab_size"], spec["context"])
    examples = training_examples(tokenizer, theorems, spec["context"])
    model = build_model(spec, tokenizer)
    order = batch_order([len(ids) for ids, _ in examples], spec["batch_size"], steps, seed)
    pad_id = tokenizer.pad_token_id
    losses = train_steps(
        model,
        lambda: collate([examples[i] for i in next(order)], pad_id),
        steps,
        spec["lr"],
        log_every,
        "proofrank LM",
        show_progress,
    )
    final = mean_loss(model, examples, spec["batch_size"], pad_id)
    record = {
        "spec": spec,
        "steps": steps,
        "seed": seed,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tokenizer),
        "examples": len(examples),
        "log_every": log_every,
        "losses": losses,
        "final_loss": final,
    }
    with atomic_dir(folder) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        write_json(tmp / TRAINING_RECORD, record)
    return record
