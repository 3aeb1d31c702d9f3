"""Locate-and-edit on a causal LM's MLP value projections: the keys, values and hidden states an
editor reads, the target vectors it optimises, and the closed-form updates of ROME and MEMIT,
with Norm-Anchor Scaling (NAS) as one rescaling of the target value.

Notation (MEMIT's): an MLP's value projection maps a key k (the activation after the
non-linearity, d_ff wide) to a value v = k W (d wide); W is held here as the (d_ff, d) matrix of
GPT-2's `Conv1D` (a `Linear` layer's weight is its transpose). At the *target layer* L, the
residual stream after the block at the subject's last token is h = (h − v₀) + v₀ with v₀ the
MLP's output there. An edit finds a shift δ of h that makes the model say the new object, so
the wanted value is v* = v₀ + δ; NAS replaces v* by a · v*/‖v*‖, the same direction at a norm
`a` measured once on the unedited model, and the target becomes z = h + (v*_NAS − v₀).

Choices:

* δ is optimised jointly for all requests of a batch (each its own row, so the requests do not
  interact): Adam on the negative log-likelihood of the new object after every rewrite prompt
  under every opening, plus `weight_decay` · ‖δ‖², and after each step δ is projected into the
  ball ‖δ‖ ≤ `clamp` · ‖h‖ with ‖h‖ the *current* model's, MEMIT's clamp (the one that follows
  the model's norm, so growth can feed on itself). The optimisation stops early once the mean
  NLL of the new answers falls below `stop_nll`, as ROME's and MEMIT's does (they test 0.05
  on their whole loss; here the NLL alone, since ‖δ‖² does not shrink towards zero).
* Keys are averaged over the openings (random filler prefixes: with the subject first and
  causal attention, the templates after it cannot change its key).
* MEMIT spreads the residual z − h over the edit layers (layer l gets 1/(layers left) of what
  is left, h recomputed after each layer's update) and solves
  Δ = (λ C + Kᵀ K)⁻¹ Kᵀ R per layer, the minimiser of ‖(W + Δ) applied to K − V‖² + λ tr(Δᵀ C Δ)
  with C = E[k kᵀ] of the layer's keys over generic text.
* ROME edits the target layer only, one request at a time: the rank-one
  Δ = C⁻¹k (v* − k W)ᵀ / (kᵀ C⁻¹ k), after which k (W + Δ) = v* exactly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase


@dataclass(frozen=True)
class Layout:
    """Where a transformers causal LM keeps its blocks and their MLP value projections."""

    blocks: str
    mlp: str
    projection: str
    conv1d: bool
    """True where the projection is GPT-2's Conv1D (weight (d_ff, d)); False for Linear."""


LAYOUTS = {
    "gpt2": Layout("transformer.h", "mlp", "c_proj", True),
    "gptj": Layout("transformer.h", "mlp", "fc_out", False),
    "llama": Layout("model.layers", "mlp", "down_proj", False),
    "qwen2": Layout("model.layers", "mlp", "down_proj", False),
    "mistral": Layout("model.layers", "mlp", "down_proj", False),
}


def layout_of(model: torch.nn.Module) -> Layout:
    """The layout of `model`'s family; ValueError naming a family the editors do not know."""
    family = model.config.model_type
    if family not in LAYOUTS:
        raise ValueError(
            f"model type {family!r}: the editors know {sorted(LAYOUTS)} (extend editing.LAYOUTS)"
        )
    return LAYOUTS[family]


def block(model: torch.nn.Module, layer: int) -> torch.nn.Module:
    """Block `layer` of the model."""
    return model.get_submodule(layout_of(model).blocks)[layer]


def mlp(model: torch.nn.Module, layer: int) -> torch.nn.Module:
    """The MLP of block `layer`."""
    return block(model, layer).get_submodule(layout_of(model).mlp)


def projection(model: torch.nn.Module, layer: int) -> torch.nn.Module:
    """The MLP value projection (keys → values) of block `layer`."""
    return mlp(model, layer).get_submodule(layout_of(model).projection)


def value_matrix(model: torch.nn.Module, layer: int) -> torch.Tensor:
    """The (d_ff, d) matrix W with value = key @ W (a view for Conv1D, a transpose for Linear)."""
    weight = projection(model, layer).weight
    return weight if layout_of(model).conv1d else weight.T


@torch.no_grad()
def add_to_value_matrix(model: torch.nn.Module, layer: int, delta: torch.Tensor) -> None:
    """W ← W + Δ for the (d_ff, d) update Δ of `layer`."""
    weight = projection(model, layer).weight
    weight += delta if layout_of(model).conv1d else delta.T


@dataclass
class Batch:
    """Tokenised prompts, each followed by its request's new answer but the answer's last
    token, with the position of the subject's last token, the request each prompt belongs to,
    and `labels`: at each position the token to predict there (the answer's tokens after the
    prompt, IGNORE elsewhere)."""

    inputs: dict[str, torch.Tensor]
    positions: torch.Tensor
    owners: torch.Tensor
    labels: torch.Tensor

    def to(self, device: torch.device | str) -> Batch:
        """The batch on `device` (the model's)."""
        inputs = {name: tensor.to(device) for name, tensor in self.inputs.items()}
        moved = (self.positions, self.owners, self.labels)
        return Batch(inputs, *(tensor.to(device) for tensor in moved))


IGNORE = -100


@contextlib.contextmanager
def captured_input(module: torch.nn.Module) -> Iterator[list[torch.Tensor]]:
    """Record the input of every call of `module` while the context is open."""
    seen: list[torch.Tensor] = []
    handle = module.register_forward_hook(lambda _m, args, _out: seen.append(args[0]))
    try:
        yield seen
    finally:
        handle.remove()


@contextlib.contextmanager
def shifted_output(
    module: torch.nn.Module, batch: Batch, shift: torch.Tensor, seen: list[torch.Tensor]
) -> Iterator[None]:
    """Add `shift[owner]` to `module`'s output at each prompt's subject position; the output
    before the shift is appended to `seen`."""

    def hook(_module: torch.nn.Module, _args: tuple, output: torch.Tensor) -> torch.Tensor:
        seen.append(output)
        rows = torch.arange(output.shape[0], device=output.device)
        added = torch.zeros_like(output)
        added[rows, batch.positions] = shift[batch.owners]
        return output + added

    handle = module.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def at_subject(states: torch.Tensor, batch: Batch) -> torch.Tensor:
    """The rows of (prompts, positions, width) states at each prompt's subject position."""
    return states[torch.arange(states.shape[0], device=states.device), batch.positions]


def per_request(rows: torch.Tensor, owners: torch.Tensor, requests: int) -> torch.Tensor:
    """The mean of the rows of each request."""
    sums = torch.zeros(requests, rows.shape[1], dtype=rows.dtype, device=rows.device)
    sums.index_add_(0, owners, rows)
    counts = torch.bincount(owners, minlength=requests).clamp(min=1).to(rows.dtype)
    return sums / counts[:, None]


@torch.no_grad()
def keys(model: torch.nn.Module, layer: int, batch: Batch, requests: int) -> torch.Tensor:
    """The (requests, d_ff) keys of `layer` at the subject, averaged over each request's
    prompts."""
    with captured_input(projection(model, layer)) as seen:
        model(**batch.inputs)
    return per_request(at_subject(seen[0], batch), batch.owners, requests)


@torch.no_grad()
def hidden_and_value(
    model: torch.nn.Module, layer: int, batch: Batch, requests: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The residual stream after block `layer` (h) and the MLP's output (v₀) at the subject,
    averaged over each request's prompts, both (requests, d)."""
    zero = torch.zeros(requests, model.config.hidden_size, device=model.device)
    seen: list[torch.Tensor] = []
    with shifted_output(mlp(model, layer), batch, zero, seen):
        outputs = model(**batch.inputs, output_hidden_states=True)
    hidden = outputs.hidden_states[layer + 1]
    return (
        per_request(at_subject(hidden, batch), batch.owners, requests),
        per_request(at_subject(seen[0], batch), batch.owners, requests),
    )


@dataclass(frozen=True)
class DeltaSolver:
    """How δ is optimised (module docstring)."""

    steps: int
    lr: float
    clamp: float
    weight_decay: float
    stop_nll: float = 0.0


def solve_delta(
    model: torch.nn.Module,
    layer: int,
    batch: Batch,
    requests: int,
    solver: DeltaSolver,
) -> torch.Tensor:
    """The (requests, d) shifts δ of the residual after block `layer` at the subject that make
    each prompt's new answer (`batch.labels`) likely (module docstring). The model's parameters
    are left untouched (their gradients are not computed)."""
    if layer >= model.config.num_hidden_layers - 1:
        raise ValueError(
            f"target layer {layer}: a shift at the subject reaches the prediction only through "
            f"a later block's attention, so it must lie below {model.config.num_hidden_layers - 1}"
        )
    hidden, _ = hidden_and_value(model, layer, batch, requests)
    radius = solver.clamp * hidden.norm(dim=1, keepdim=True)
    delta = torch.zeros_like(hidden, requires_grad=True)
    optimiser = torch.optim.Adam([delta], lr=solver.lr)
    trainable = [p.requires_grad for p in model.parameters()]
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    try:
        for _ in range(solver.steps):
            seen: list[torch.Tensor] = []
            with shifted_output(mlp(model, layer), batch, delta, seen):
                logits = model(**batch.inputs).logits
            nll = torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), batch.labels.flatten(), ignore_index=IGNORE
            )
            if float(nll.detach()) < solver.stop_nll:
                break
            loss = nll + solver.weight_decay * (delta**2).sum(dim=1).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            with torch.no_grad():
                scale = (radius / delta.norm(dim=1, keepdim=True).clamp(min=1e-12)).clamp(max=1)
                delta *= scale
    finally:
        for parameter, flag in zip(model.parameters(), trainable, strict=True):
            parameter.requires_grad_(flag)
    return delta.detach()


def anchor_scaled(vstar: torch.Tensor, anchor: float) -> torch.Tensor:
    """NAS: each row of v* rescaled to norm `anchor`, its direction kept."""
    return anchor * vstar / vstar.norm(dim=1, keepdim=True).clamp(min=1e-12)


def memit_delta(
    keys_: torch.Tensor, residuals: torch.Tensor, covariance: torch.Tensor, weight: float
) -> torch.Tensor:
    """MEMIT's (d_ff, d) update for (n, d_ff) keys and (n, d) residuals: the minimiser of
    ‖K Δ − R‖² + λ tr(Δᵀ C Δ), i.e. (λ C + Kᵀ K)⁻¹ Kᵀ R (in float64)."""
    k = keys_.double()
    system = weight * covariance.double() + k.T @ k
    return torch.linalg.solve(system, k.T @ residuals.double()).to(keys_.dtype)


def rome_delta(
    key: torch.Tensor, wanted: torch.Tensor, matrix: torch.Tensor, covariance: torch.Tensor
) -> torch.Tensor:
    """ROME's rank-one (d_ff, d) update that maps `key` to `wanted` exactly and leaves every key
    k' with k'ᵀ C⁻¹ key = 0 where it was (in float64)."""
    k = key.double()
    direction = torch.linalg.solve(covariance.double(), k)
    residual = wanted.double() - k @ matrix.double()
    return (torch.outer(direction, residual) / (k @ direction)).to(key.dtype)


def apply_update(model: torch.nn.Module, layer: int, update: torch.Tensor) -> torch.Tensor:
    """Add `update` to `layer`'s value matrix; the update applied (memit_edit's default)."""
    add_to_value_matrix(model, layer, update)
    return update


def memit_edit(
    model: torch.nn.Module,
    layers: Sequence[int],
    batch: Batch,
    targets: torch.Tensor,
    covariances: Sequence[torch.Tensor],
    weight: float,
    apply: Callable[[torch.nn.Module, int, torch.Tensor], torch.Tensor] = apply_update,
) -> list[torch.Tensor]:
    """Move the residual after the last of `layers` at each request's subject to its target
    row of `targets` (requests, d), spreading the change over `layers` (module docstring);
    `apply` writes each layer's update (and may change it, as the random-direction control
    does); the updates as applied."""
    requests, last = targets.shape[0], layers[-1]
    updates = []
    for done, (layer, moment) in enumerate(zip(layers, covariances, strict=True)):
        hidden, _ = hidden_and_value(model, last, batch, requests)
        residuals = (targets - hidden) / (len(layers) - done)
        update = memit_delta(keys(model, layer, batch, requests), residuals, moment, weight)
        updates.append(apply(model, layer, update))
    return updates


@torch.no_grad()
def covariance(
    model: torch.nn.Module,
    layer: int,
    texts: Sequence[str],
    tokenizer: PreTrainedTokenizerBase,
    ridge: float,
    batch_size: int = 256,
) -> torch.Tensor:
    """C = E[k kᵀ] of `layer`'s keys over every real token of `texts`, plus `ridge` times its
    mean eigenvalue on the diagonal (float64): keys of units that generic text never drives
    give C eigenvalues near zero, along which an update would otherwise grow without bound."""
    total, count = None, 0
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        inputs = tokenizer(chunk, padding=True, return_tensors="pt").to(model.device)
        with captured_input(projection(model, layer)) as seen:
            model(**inputs)
        rows = seen[0][inputs["attention_mask"].bool()].double()
        total = rows.T @ rows if total is None else total + rows.T @ rows
        count += rows.shape[0]
    moment = total / count
    identity = torch.eye(moment.shape[0], dtype=moment.dtype, device=moment.device)
    return moment + ridge * torch.trace(moment) / moment.shape[0] * identity
