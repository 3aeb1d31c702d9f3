"""A pretrained causal language model read as the study's reader of in-context classification:
the paper scale's readers (Llama, Qwen and GPT-2 folders, loaded locally, never downloaded).

* **Prompt.** Demonstrations `Input: <text>\\nAnswer: <label word>` joined by a blank line, then
  the query `Input: <text>\\nAnswer:` (`PromptFormat`; a set's own words can replace the two
  prefixes). Each piece is tokenized on its own and the ids are concatenated after the prefix
  the tokenizer itself adds (BOS for Llama, nothing for Qwen), so every item's token span is
  exact; the ids can differ from tokenizing the joined text at the seams, a choice for exact
  spans.
* **Answer vector.** The softmax over the label words' first tokens (each word after a space) of
  the next-token logits at the last position: the card's answer vector. Label words whose first
  tokens coincide are refused.
* **Readout layer.** The last attention layer. Its queries and keys are captured after the
  rotary embedding by an attention function registered with transformers' `AttentionInterface`
  (`CAPTURE`): it records the layer's query and key states and then runs the library's SDPA, so
  the model computes exactly what it computes under `sdpa`. Keys of a grouped-query layer are
  repeated to each query head; queries are multiplied by the layer's scaling, so that ⟨q, k⟩ per
  head is the layer's attention logit.
* **An item's key** is the key of its last token (the label word that ends the demonstration);
  its attention mass is the readout query's softmax weight summed over the item's span, per
  head, averaged over heads.

Batch 1 throughout: prompts differ in length, and one prompt per forward keeps the numbers free
of padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import AttentionInterface, AutoModelForCausalLM, AutoTokenizer
from transformers.integrations.sdpa_attention import sdpa_attention_forward

CAPTURE = "reprolab_readout_capture"
"""The attention implementation the reader loads models with: SDPA that records the readout
layer's queries and keys."""


def _capturing_sdpa(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, *args, **kw):
    """SDPA that first appends (query, key) to `module.readout_capture` when the reader set it."""
    store = getattr(module, "readout_capture", None)
    if store is not None:
        store.append((query.detach(), key.detach()))
    return sdpa_attention_forward(module, query, key, *args, **kw)


AttentionInterface.register(CAPTURE, _capturing_sdpa)


@dataclass(frozen=True)
class PromptFormat:
    """How demonstrations and the query are written (module docstring)."""

    input_prefix: str = "Input:"
    answer_prefix: str = "Answer:"
    separator: str = "\n\n"

    def demonstration(self, text: str, word: str) -> str:
        """One labelled item, ending with its label word."""
        return f"{self.input_prefix} {text}\n{self.answer_prefix} {word}"

    def query(self, text: str) -> str:
        """The query, ending where the answer's word would start."""
        return f"{self.input_prefix} {text}\n{self.answer_prefix}"


@dataclass(frozen=True)
class Reading:
    """What one forward of a prompt gives: answer (p,) the label-word probabilities; keys
    (k, H, h) the items' readout keys and item_queries (k, H, h) their own scaled queries (at
    each item's last token); query (H, h) the last position's scaled readout query and
    query_key (H, h) its own key; attention (k,) each item's attention mass from the last
    position, averaged over heads."""

    answer: np.ndarray
    keys: np.ndarray
    item_queries: np.ndarray
    query: np.ndarray
    query_key: np.ndarray
    attention: np.ndarray


class LanguageModelReader:
    """A causal LM with its tokenizer, the set's label words and a prompt format."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer,
        label_words: Sequence[str],
        prompt: PromptFormat = PromptFormat(),
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.prompt = prompt
        self.label_words = list(label_words)
        self.label_ids = label_token_ids(tokenizer, label_words)
        self.readout = readout_attention(model)
        self.prefix = list(tokenizer("", add_special_tokens=True)["input_ids"])
        self.heads = int(model.config.num_attention_heads)

    @classmethod
    def from_folder(
        cls,
        folder: str | Path,
        label_words: Sequence[str],
        prompt: PromptFormat = PromptFormat(),
        device: str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> LanguageModelReader:
        """Load a transformers model folder (config, weights, tokenizer) without the network."""
        folder = Path(folder)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(
                f"{folder}: no config.json; expected a transformers model folder"
            )
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            folder, local_files_only=True, dtype=dtype, attn_implementation=CAPTURE
        )
        return cls(model.to(device), tokenizer, label_words, prompt)

    def encode(
        self, items: Sequence[tuple[str, int]], query: str
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """The prompt's ids and each item's [start, end) token span (its demonstration, the
        separator excluded)."""
        ids, spans = list(self.prefix), []
        for text, label in items:
            demonstration = self._ids(self.prompt.demonstration(text, self.label_words[label]))
            spans.append((len(ids), len(ids) + len(demonstration)))
            ids += demonstration + self._ids(self.prompt.separator)
        return ids + self._ids(self.prompt.query(query)), spans

    def read(self, items: Sequence[tuple[str, int]], query: str) -> Reading:
        """One forward of the prompt of `items` (text, label) before `query`."""
        ids, spans = self.encode(items, query)
        logits, queries, keys = self._forward(ids)
        scores = torch.einsum("hd,thd->ht", queries[-1], keys)
        weights = torch.softmax(scores.double(), dim=-1).mean(0)
        answer = torch.softmax(logits[self.label_ids].double(), dim=-1)
        ends = [end - 1 for _, end in spans]

        def numpy(states: torch.Tensor) -> np.ndarray:
            return states.double().cpu().numpy()

        return Reading(
            answer=numpy(answer),
            keys=numpy(keys[ends]),
            item_queries=numpy(queries[ends]),
            query=numpy(queries[-1]),
            query_key=numpy(keys[-1]),
            attention=np.array([float(weights[start:end].sum()) for start, end in spans]),
        )

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _forward(self, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The last position's logits (V,) and the readout layer's scaled queries (T, H, h) and
        keys (T, H, h), a grouped-query layer's keys repeated to each query head."""
        store: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.readout.readout_capture = store
        try:
            with torch.no_grad():
                device = next(self.model.parameters()).device
                logits = self.model(torch.tensor([ids], device=device)).logits[0, -1]
        finally:
            self.readout.readout_capture = None
        query, key = store[-1]  # (1, H, T, h) and (1, H_kv, T, h)
        key = key.repeat_interleave(query.shape[1] // key.shape[1], dim=1)
        return logits, (query[0] * self.readout.scaling).transpose(0, 1), key[0].transpose(0, 1)


def label_token_ids(tokenizer, label_words: Sequence[str]) -> list[int]:
    """The first token of each label word after a space; ValueError when two coincide."""
    firsts = [
        tokenizer(" " + word, add_special_tokens=False)["input_ids"][0] for word in label_words
    ]
    if len(set(firsts)) != len(firsts):
        raise ValueError(
            f"label words {list(label_words)} share a first token ({firsts}): choose words "
            "whose first tokens differ"
        )
    return firsts


def readout_attention(model: torch.nn.Module) -> torch.nn.Module:
    """The last attention layer: the module with the highest `layer_idx` that projects queries
    (its class name ends in 'Attention')."""
    layers = [
        module
        for module in model.modules()
        if type(module).__name__.endswith("Attention") and hasattr(module, "layer_idx")
    ]
    if not layers:
        raise ValueError(f"{type(model).__name__}: no attention layer with a layer_idx found")
    return max(layers, key=lambda module: module.layer_idx)
