"""The trained readers: models that answer a query of in-context linear regression from the items
in its prompt, and expose the keys and queries of their readout attention layer.

* `LinearAttentionReader`: one layer of linear self-attention, the theory's own form,
  ŷ = A x_q + Σ_k (W_V z_k) ⟨W_K z_k, W_Q x_q⟩ with z_k = [x_k; y_k] over the context items only
  (an unnormalised sum; A is the skip path). One head of width m (d + p by default).
* `SoftmaxReader`: a `transformers.GPT2Model` built from a config (causal softmax attention,
  pre-LayerNorm blocks), fed by one linear embedding of the tokens [x_k; y_k; 0] of the items and
  [x_q; 0; 1] of the query, which comes last; a linear head reads the answer at the query token.
  Its position embeddings are zeroed and frozen, so order reaches it only through the causal
  mask (an item sees the items before it). Its readout layer is the last block's attention, of
  `heads` heads of width hidden / heads laid out as contiguous blocks of the concatenated keys.

Both take numpy float arrays (x (B, n, d), y (B, n, p), x_query (B, d)), compute in float32 on
the CPU and return float64: `predict` the answers; `readout_keys_queries` the readout layer's
keys of the context items and the query token's query, scaled so that their inner product per
head is the attention score the layer uses (its logit for the softmax reader); `pool_keys` what a
key-value memory caches of a pool, each item's keys as if it were alone with the query.

Initial weights come from torch's global generator (seed it first: `seed_everything`);
`train_reader` trains on `icl_data.training_prompts` with the shared training loop.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Protocol

import numpy as np
import torch
from torch import nn
from transformers import GPT2Config, GPT2Model

from reprolab.core.determinism import derive_seed
from reprolab.models.training import train_steps
from reprolab.studies.overcorrection.icl_data import training_prompts


@dataclass(frozen=True)
class PoolKeys:
    """A pool's readout-layer keys as a memory caches them: keys (N, m) and item_queries (N, m)
    of each item seen alone with the query; query (m,) and query_key (m,) the query token's
    query and own key with no items."""

    keys: np.ndarray
    query: np.ndarray
    query_key: np.ndarray
    item_queries: np.ndarray


class PromptReader(Protocol):
    """What the selectors, channels and measures read of a reader: the numpy methods below (a
    trained `Reader`, or a language model over text trials, `text_reader.TextReader`) and its
    sizes: `dim` of an input, `outputs` of an answer, `heads` of the readout layer."""

    dim: int
    outputs: int
    heads: int

    def predict(self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray) -> np.ndarray: ...

    def readout_keys_queries(
        self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def pool_keys(self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray) -> PoolKeys: ...

    def residuals(self, x: np.ndarray, y: np.ndarray) -> np.ndarray: ...


def as_tensors(*arrays: np.ndarray) -> list[torch.Tensor]:
    """Numpy arrays as the readers' float32 tensors."""
    return [torch.as_tensor(np.asarray(array), dtype=torch.float32) for array in arrays]


class Reader(nn.Module, ABC):
    """What the study needs of a trained reader (module docstring): a torch module mapping
    (x, y, x_query) tensors to answers, and the keys and queries of all its tokens at the readout
    layer; the numpy methods are built on those two."""

    def __init__(self, dim: int, outputs: int, heads: int, head_width: int) -> None:
        super().__init__()
        self.dim, self.outputs, self.heads, self.head_width = dim, outputs, heads, head_width

    @abstractmethod
    def forward(self, x: torch.Tensor, y: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
        """The answers (B, p) to the queries (B, d) with context items x (B, n, d), y (B, n, p)."""

    @abstractmethod
    def readout_states(
        self, x: torch.Tensor, y: torch.Tensor, x_query: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and queries (B, n + 1, heads × head_width) of every token of the prompt at the
        readout layer, the query token last; keys scaled so that ⟨key, query⟩ per head is the
        score the layer uses."""

    @torch.no_grad()
    def predict(self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray) -> np.ndarray:
        """The answers (B, p), float64."""
        return self(*as_tensors(x, y, x_query)).double().numpy()

    @torch.no_grad()
    def readout_keys_queries(
        self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The readout layer's keys of the context items (B, n, m) and the query token's query
        (B, m) in these prompts, float64."""
        keys, queries = self.readout_states(*as_tensors(x, y, x_query))
        return keys[:, :-1].double().numpy(), queries[:, -1].double().numpy()

    @torch.no_grad()
    def pool_keys(self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray) -> PoolKeys:
        """What a memory caches of a pool of (N, d) items with answers (N, p) for one (d,) query:
        each item's key and own query from the prompt [item, query] (so computed singly, never
        beside other items), the query token's query and own key from the prompt [query]."""
        count = len(x)
        single = as_tensors(x[:, None], y[:, None], np.repeat(x_query[None], count, 0))
        item_keys, item_queries = self.readout_states(*single)
        alone = as_tensors(
            np.zeros((1, 0, self.dim)), np.zeros((1, 0, self.outputs)), x_query[None]
        )
        keys, queries = self.readout_states(*alone)
        return PoolKeys(
            keys=item_keys[:, 0].double().numpy(),
            query=queries[0, -1].double().numpy(),
            query_key=keys[0, -1].double().numpy(),
            item_queries=item_queries[:, 0].double().numpy(),
        )

    def residuals(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The items' residual values r_k = y_k − ŷ(∅ | x_k) against the reader's own answer with
        no context (its learnt prior), for (..., d) inputs and (..., p) answers."""
        flat = x.reshape(-1, self.dim)
        empty = np.zeros((len(flat), 0, self.dim)), np.zeros((len(flat), 0, self.outputs))
        return y - self.predict(*empty, flat).reshape(y.shape)


class LinearAttentionReader(Reader):
    """One layer of linear self-attention with a skip path (module docstring); initial weights
    N(0, 0.1²) for the skip A and N(0, 0.3²) for W_K, W_Q, W_V."""

    def __init__(self, dim: int = 8, outputs: int = 4, width: int | None = None) -> None:
        width = width or dim + outputs
        super().__init__(dim, outputs, heads=1, head_width=width)
        self.skip = nn.Parameter(0.1 * torch.randn(outputs, dim))
        self.w_key = nn.Parameter(0.3 * torch.randn(width, dim + outputs))
        self.w_query = nn.Parameter(0.3 * torch.randn(width, dim))
        self.w_value = nn.Parameter(0.3 * torch.randn(outputs, dim + outputs))

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
        """ŷ = A x_q + Σ_k (W_V z_k) ⟨W_K z_k, W_Q x_q⟩ over the context items."""
        items = torch.cat([x, y], -1)
        scores = torch.einsum("bnm,bm->bn", items @ self.w_key.T, x_query @ self.w_query.T)
        return x_query @ self.skip.T + torch.einsum("bn,bnp->bp", scores, items @ self.w_value.T)

    def readout_states(
        self, x: torch.Tensor, y: torch.Tensor, x_query: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys W_K z of the tokens z = [x_k; y_k] and [x_q; 0], queries W_Q x of their inputs."""
        query_token = torch.cat([x_query, torch.zeros(len(x_query), self.outputs)], -1)
        tokens = torch.cat([torch.cat([x, y], -1), query_token[:, None]], 1)
        inputs = torch.cat([x, x_query[:, None]], 1)
        return tokens @ self.w_key.T, inputs @ self.w_query.T


class SoftmaxReader(Reader):
    """A small GPT-2 reading [x; y; is-query] tokens (module docstring); `context` bounds the
    prompt length (items + 1). Eager attention, so that attention probabilities can be asked
    for; no dropout; no special tokens (its one-word vocabulary is never used: the tokens come in
    as embeddings)."""

    def __init__(
        self,
        dim: int = 8,
        outputs: int = 4,
        layers: int = 2,
        hidden: int = 64,
        heads: int = 4,
        context: int = 64,
    ) -> None:
        super().__init__(dim, outputs, heads=heads, head_width=hidden // heads)
        config = GPT2Config(
            vocab_size=1,
            n_positions=context,
            n_embd=hidden,
            n_layer=layers,
            n_head=heads,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=None,
            eos_token_id=None,
            attn_implementation="eager",
        )
        self.transformer = GPT2Model(config)
        with torch.no_grad():
            self.transformer.wpe.weight.zero_()
        self.transformer.wpe.weight.requires_grad_(False)
        self.embed = nn.Linear(dim + outputs + 1, hidden)
        self.head = nn.Linear(hidden, outputs)

    def tokens(self, x: torch.Tensor, y: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
        """The embedded prompt (B, n + 1, hidden): items [x_k; y_k; 0], then the query
        [x_q; 0; 1]."""
        items = torch.cat([x, y, torch.zeros(*x.shape[:2], 1)], -1)
        count = len(x_query)
        query = torch.cat([x_query, torch.zeros(count, self.outputs), torch.ones(count, 1)], -1)
        return self.embed(torch.cat([items, query[:, None]], 1))

    def forward(self, x: torch.Tensor, y: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
        """The head's reading of the last hidden state (after the final LayerNorm) at the query."""
        hidden = self.transformer(inputs_embeds=self.tokens(x, y, x_query), use_cache=False)
        return self.head(hidden.last_hidden_state[:, -1])

    def readout_states(
        self, x: torch.Tensor, y: torch.Tensor, x_query: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The last block's keys (times its scaling 1/√head_width, so ⟨key, query⟩ per head is the
        attention logit) and queries, read by a hook on its query-key-value projection."""
        attention = self.transformer.h[-1].attn
        captured: list[torch.Tensor] = []
        hook = attention.c_attn.register_forward_hook(lambda _m, _i, out: captured.append(out))
        try:
            self.transformer(inputs_embeds=self.tokens(x, y, x_query), use_cache=False)
        finally:
            hook.remove()
        queries, keys, _ = captured[0].split(attention.split_size, -1)
        return keys * attention.scaling, queries


class _SquaredError(nn.Module):
    """A reader with its training objective, in the form the shared loop trains (`train_steps`
    reads `.loss` of the model's output): the mean squared error of its answers."""

    def __init__(self, reader: Reader) -> None:
        super().__init__()
        self.reader = reader

    def forward(
        self, x: torch.Tensor, y: torch.Tensor, x_query: torch.Tensor, y_query: torch.Tensor
    ) -> SimpleNamespace:
        """The batch's loss, mean over prompts and answer coordinates."""
        return SimpleNamespace(loss=torch.mean((self.reader(x, y, x_query) - y_query) ** 2))


def train_reader(
    reader: Reader,
    prior: np.ndarray,
    *,
    steps: int,
    n_max: int,
    sigma: float,
    noise: float,
    batch: int,
    lr: float,
    seed: int,
    log_every: int = 100,
    show_progress: bool = True,
) -> list[float]:
    """Train `reader` on training prompts of the prior (each batch one context size n ~
    U{0..n_max}; prompts from derive_seed(seed, "prompts")) with the shared loop (Adam without
    weight decay, warm-up then cosine decay, gradients clipped at norm 1); the mean loss of each
    window of `log_every` steps. The reader is left in eval mode."""
    rng = np.random.default_rng(derive_seed(seed, "prompts"))
    names = ("x", "y", "x_query", "y_query")

    def next_batch() -> dict[str, torch.Tensor]:
        """One training batch of a random context size."""
        n = int(rng.integers(0, n_max + 1))
        prompts = training_prompts(rng, prior, batch, n, sigma, noise)
        return dict(zip(names, as_tensors(*prompts), strict=True))

    label = f"training {type(reader).__name__}"
    losses = train_steps(
        _SquaredError(reader), next_batch, steps, lr, log_every, label, show_progress
    )
    reader.eval()
    return losses
