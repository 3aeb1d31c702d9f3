"""A frozen image transformer applied frame by frame, with adapters hooked into its blocks.

`AdaptedVideoModel(backbone, plan, ...)` freezes the backbone, registers a forward hook on
each block that has adapters in `plan` (adapters.placement) and adds a linear head. A clip
[B, T, 3, H, W] runs as B*T images; the hooks see each block's tokens [B*T, N, d] with each
clip's frames consecutive, which is what a temporal adapter convolves over.

The head reads one of two poolings (params `head.pool`):
* `tokens`: each token position's mean over time, the positions concatenated (N*d features):
  the tiny backbone's CLS token did not carry the motion the temporal adapters compute
  (the study page has the prototype's numbers), and the concatenation keeps *where* tokens
  changed;
* `cls`: the CLS token's mean over time (ST-Adapter's and AIM's head), for a large backbone
  whose N*d would make the head the bulk of the trainable parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from reprolab.studies.strap.adapters import make_adapter
from reprolab.studies.strap.backbone import blocks, hidden_states, token_count

POOLINGS = ("tokens", "cls")


class AdaptedVideoModel(nn.Module):
    """Frozen backbone + adapters after the blocks `plan` names + a linear head."""

    def __init__(
        self,
        backbone: nn.Module,
        plan: Sequence[str],
        bottleneck: int,
        classes: int,
        pool: str,
        conv_std: float,
    ) -> None:
        super().__init__()
        layers = blocks(backbone)
        if len(plan) != len(layers):
            raise ValueError(f"placement has {len(plan)} entries for {len(layers)} blocks")
        if pool not in POOLINGS:
            raise ValueError(f"head pool {pool!r}: expected one of {list(POOLINGS)}")
        self.backbone = backbone.eval()
        for weight in self.backbone.parameters():
            weight.requires_grad_(False)
        width = int(backbone.config.hidden_size)
        self.pool = pool
        self.frames = 0  # set by forward, read by the hooks
        self.adapters = nn.ModuleList(
            nn.ModuleList(make_adapter(kind, width, bottleneck, conv_std) for kind in kinds)
            for kinds in plan
        )
        features = width * (token_count(backbone) if pool == "tokens" else 1)
        self.head = nn.Linear(features, classes)
        self._hooks = [
            layer.register_forward_hook(self._hook(index))
            for index, layer in enumerate(layers)
            if plan[index]
        ]

    def _hook(self, index: int):
        def apply(module: nn.Module, inputs: tuple, output: torch.Tensor | tuple) -> object:
            tokens = output[0] if isinstance(output, tuple) else output
            for adapter in self.adapters[index]:
                tokens = adapter(tokens, self.frames)
            return (tokens, *output[1:]) if isinstance(output, tuple) else tokens

        return apply

    def train(self, mode: bool = True) -> AdaptedVideoModel:
        """Train the adapters and head; the backbone stays in eval mode (no dropout)."""
        super().train(mode)
        self.backbone.eval()
        return self

    def features(self, clips: torch.Tensor) -> torch.Tensor:
        """The pooled clip features [B, F] the head reads."""
        batch, frames = clips.shape[:2]
        self.frames = frames
        tokens = hidden_states(self.backbone, clips.flatten(0, 1))
        tokens = tokens.view(batch, frames, *tokens.shape[1:])
        if self.pool == "cls":
            return tokens[:, :, 0].mean(1)
        return tokens.mean(1).flatten(1)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        """Class logits of `clips` [B, T, 3, H, W] (normalised pixels)."""
        return self.head(self.features(clips))

    def trainable_parameters(self) -> int:
        """The number of trainable parameters (adapters and head)."""
        return sum(w.numel() for w in self.parameters() if w.requires_grad)

    def remove_hooks(self) -> None:
        """Detach the adapters from the backbone (which other models reuse)."""
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
