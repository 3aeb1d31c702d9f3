"""Class-level routing anchors: what TRPR's trust region is centred on.

An anchor is a routing distribution per adapted block, [A, E], one per class. Two ways of making
it are built, as the design card and its prototype found:

* `ema_anchor` (the card): while a class is trained, the exponential moving average (decay
  0.9) of its batches' mean routing, frozen when its task ends; training projects each input
  onto the ball around its label's anchor.
* `mean_anchor` (the prototype's finding): the mean routing of the class's training images at
  the end of its task; only inference projects.

At inference the label is unknown, so the anchor is the soft mixture `soft_anchor`:
â(x) = Σ_c softmax_c(−‖f̂(x) − μ̂_c‖² / T) a_c, with f̂ the image's *frozen* feature and μ̂_c
its class's frozen prototype (both unit-normalised), which do not drift as adapters train. The
same weights say which task the image is taken for (`task_identification`), the check that the
anchor is not an oracle.

All routing is kept as log-probabilities; mixtures are formed in probability space.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def mean_anchor(log_routes: torch.Tensor) -> torch.Tensor:
    """log of the mean routing [A, E] of one class's images, from their log routing
    [A, N, E]."""
    return torch.log(log_routes.exp().mean(1))


def ema_anchor(
    anchor: torch.Tensor | None, log_routes: torch.Tensor, decay: float = 0.9
) -> torch.Tensor:
    """The card's anchor after one more batch of the class: `decay`·a + (1 − `decay`)·(the
    batch's mean routing), in probability space; the batch's mean routing when there is no
    anchor yet. `anchor` [A, E] and the result are log-probabilities; `log_routes` [A, N, E]."""
    batch = log_routes.exp().mean(1)
    if anchor is None:
        return torch.log(batch)
    return torch.log(decay * anchor.exp() + (1.0 - decay) * batch)


def anchor_weights(
    features: torch.Tensor, prototypes: torch.Tensor, temperature: float
) -> torch.Tensor:
    """[B, C] softmax weights of the classes for each image: −squared distance between the
    unit-normalised frozen `features` [B, D] and class `prototypes` [C, D], over
    `temperature`."""
    if temperature <= 0:
        raise ValueError(f"anchor temperature {temperature}: must be positive")
    distance = torch.cdist(F.normalize(features, dim=-1), F.normalize(prototypes, dim=-1))
    return torch.softmax(-distance.pow(2) / temperature, -1)


def soft_anchor(
    features: torch.Tensor, prototypes: torch.Tensor, anchors: torch.Tensor, temperature: float
) -> torch.Tensor:
    """log â [A, B, E] of each image (module docstring) from the classes' frozen `prototypes`
    [C, D] and log `anchors` [C, A, E]."""
    weights = anchor_weights(features, prototypes, temperature)
    return torch.log(torch.einsum("bc,cae->abe", weights, anchors.exp()))


def task_identification(
    features: torch.Tensor,
    prototypes: torch.Tensor,
    class_tasks: torch.Tensor,
    true_tasks: torch.Tensor,
    temperature: float,
) -> float:
    """The share of images whose most weighted class (`anchor_weights`) belongs to their own
    task: 1 means the soft anchor knows every image's task. `class_tasks` [C] is each class's
    task, `true_tasks` [B] each image's."""
    weights = anchor_weights(features, prototypes, temperature)
    guessed = class_tasks[weights.argmax(-1)]
    return float((guessed == true_tasks).float().mean())
