"""Visual grounding signals of a vision-language policy, as tensor functions.

* `image_attention_mass`: for each response token, the attention mass its predicting position
  puts on the image tokens, averaged over heads and the last `last_layers` layers. It is HiCCR's
  token score in training (from the attention probabilities the eager forward pass computes
  anyway) and one of the three grounding metrics.
* `image_mass_from_lse`: the same mass from queries, the image keys alone and the per-query
  log-sum-exp that fused attention kernels (FlashAttention) return, at O(T·|I|·d) per layer: the
  paper-scale path that keeps HiCCR's overhead small without materialising T×T attention.
* `image_gradient_share`: the share of the squared input-gradient norm that falls on the image
  embeddings. ‖∂log π/∂E_img‖ alone grows with the model's confidence (the card's prototype saw
  it rise under every RL method), because the logit gradient (one-hot − p) scales every input's
  gradient alike; a share divides that common factor out, so it measures where the sensitivity
  lies rather than how large it is.

The position that predicts response token p is p − 1 (causal language modelling), so the
scores of tokens p = start..L−1 come from query rows start−1..L−2.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def image_attention_mass(
    attentions: Sequence[torch.Tensor],
    image_mask: torch.Tensor,
    response_start: int,
    last_layers: int,
) -> torch.Tensor:
    """[B, T] attention mass on the image tokens of each of the T = L − `response_start`
    response tokens. `attentions`: per layer [B, heads, L, L] probabilities; `image_mask` [B, L]
    marks the image tokens (keys)."""
    if not 1 <= last_layers <= len(attentions):
        raise ValueError(f"last_layers {last_layers}: expected 1..{len(attentions)}")
    length = attentions[0].shape[-1]
    if not 1 <= response_start < length:
        raise ValueError(f"response_start {response_start}: expected 1..{length - 1}")
    keys = image_mask[:, None, None, :].to(attentions[0].dtype)
    masses = [
        (layer[:, :, response_start - 1 : length - 1, :] * keys).sum(-1).mean(1)
        for layer in attentions[-last_layers:]
    ]
    return torch.stack(masses).mean(0)


def image_mass_from_lse(
    queries: torch.Tensor, image_keys: torch.Tensor, lse: torch.Tensor, scale: float
) -> torch.Tensor:
    """[B, T] attention mass on the image keys from `queries` [B, heads, T, d], `image_keys`
    [B, heads, I, d] and the log-sum-exp `lse` [B, heads, T] of each query's scaled scores over
    all of its keys, averaged over heads: Σ_{j∈I} exp(q·k_j·scale − lse)."""
    scores = torch.einsum("bhtd,bhid->bhti", queries, image_keys) * scale
    return torch.exp(scores - lse[..., None]).sum(-1).mean(1)


def image_gradient_share(gradients: torch.Tensor, image_mask: torch.Tensor) -> torch.Tensor:
    """[B] share of each sequence's squared input-gradient norm on its image embeddings.
    `gradients` [B, L, D] (of a log-probability with respect to the input embeddings),
    `image_mask` [B, L]. A sequence with a zero gradient gets 0."""
    squared = gradients.pow(2).sum(-1)
    on_image = (squared * image_mask.to(squared.dtype)).sum(1)
    total = squared.sum(1)
    return torch.where(total > 0, on_image / torch.where(total > 0, total, 1.0), 0.0)
