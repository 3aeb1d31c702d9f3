"""Which samples of a batch update the visual path: the necessity gate and its controls.

Necessity is ``v_i = ℓ_i(null) − ℓ_i(image)``, the per-token loss of the answer under a null
image minus under the sample's own (nats/token), measured with the current model and no
gradient (`necessity`). The null is another sample's image from the same batch (a cyclic
shift of the batch, so no sample keeps its own; in the design card's prototype the
dataset-mean image was off-distribution and routed half of the text-only items) or, as an
ablation, the mean image.

Gates return ``[B]`` float tensors in {0, 1}:

* `NecessityGate`: ``g = 1[v > max(floor, noise)]``, the noise level read off the negative
  tail of the task's necessity values (see the class). The design card's fixed τ and its
  prototype's running median both route a share of every task, text-only ones included (the
  median by construction routes half of what beats the floor); see docs/studies/vngct.md.
* `RandomGate`: ``g ~ Bernoulli(rate)``, the control that routes as many samples as VNG-CT
  did on the same task but not the same ones.
"""

from __future__ import annotations

import numpy as np
import torch


def shifted(values: torch.Tensor) -> torch.Tensor:
    """`values` rolled by one along the batch: every sample gets its neighbour's entry."""
    return torch.roll(values, shifts=1, dims=0)


class NecessityGate:
    """Route samples whose necessity beats both a floor and the task's noise level.

    For a sample whose image is irrelevant, its own image and another sample's are
    exchangeable, so its necessity is noise symmetric about 0; the gate estimates that noise
    from the task's negative tail (the mirrored `noise_quantile` of the necessity values seen
    so far in the task, this batch included) and routes ``v > max(floor, −quantile)``.
    """

    def __init__(self, floor: float, noise_quantile: float) -> None:
        if not 0.0 < noise_quantile < 0.5:
            raise ValueError(f"gate noise_quantile must lie in (0, 0.5), got {noise_quantile}")
        self.floor = floor
        self.noise_quantile = noise_quantile
        self._seen: list[np.ndarray] = []

    def start_task(self) -> None:
        """Forget the previous task's necessity values."""
        self._seen = []

    def __call__(self, necessity: torch.Tensor) -> torch.Tensor:
        """The gate for one batch of necessity values ``[B]``."""
        self._seen.append(necessity.detach().double().cpu().numpy())
        noise = -float(np.quantile(np.concatenate(self._seen), self.noise_quantile))
        return (necessity > max(self.floor, noise)).to(torch.float32)


class RandomGate:
    """Route each sample with probability `rate`, drawn from a seeded generator."""

    def __init__(self, seed: int) -> None:
        self.generator = torch.Generator().manual_seed(seed)
        self.rate = 0.0

    def __call__(self, batch_size: int) -> torch.Tensor:
        """The gate for a batch of `batch_size` samples at the current `rate`."""
        draws = torch.rand(batch_size, generator=self.generator)
        return (draws < self.rate).to(torch.float32)
