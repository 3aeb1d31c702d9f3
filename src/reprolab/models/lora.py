"""LoRA adapters on a language model, through `peft`, seeded and in place.

Paper-scale fine-tuning of a 7B vision-language model trains low-rank adapters on the language
model instead of its weights. `add_lora` injects `peft` LoRA layers into the given module (the
language model of a LLaVA, not the whole model: the projector and the caller's own modules keep
their trainability) and freezes everything else of that module.

Choices: `peft.inject_adapter_in_model` (the module keeps its class and attribute paths, so code
that reaches into ``model.model.language_model`` keeps working; `get_peft_model` would wrap it);
the adapters' random initialisation runs under ``torch.manual_seed(seed)`` inside
`torch.random.fork_rng`, so the same seed gives the same adapters and the caller's RNG state is
left alone; ``lora_B`` starts at zero (peft's default), so the adapted module computes exactly
what it computed before until it is trained. `peft` is imported when LoRA is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class LoRA:
    """Rank, scale numerator and target module names of the adapters (rank 0: no LoRA)."""

    rank: int = 0
    alpha: float = 16.0
    dropout: float = 0.0
    targets: Sequence[str] = ("q_proj", "k_proj", "v_proj", "o_proj")

    def __post_init__(self) -> None:
        if self.rank < 0:
            raise ValueError(f"lora rank must be >= 0, got {self.rank}")
        if self.rank and not self.targets:
            raise ValueError("lora targets: name at least one module to adapt")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"lora dropout must be in [0, 1), got {self.dropout}")

    @property
    def enabled(self) -> bool:
        """Whether any adapter is added."""
        return self.rank > 0


def add_lora(module: nn.Module, lora: LoRA, seed: int) -> list[nn.Parameter]:
    """Inject `lora`'s adapters into the linear layers of `module` named in ``lora.targets``.

    Every other parameter of `module` is frozen; returns the adapters' parameters. A ValueError
    names the targets when none of them is a module name of `module`.
    """
    from peft import LoraConfig, inject_adapter_in_model

    suffixes = {name.rsplit(".", 1)[-1] for name, _ in module.named_modules()}
    if not suffixes & set(lora.targets):
        raise ValueError(
            f"lora targets {list(lora.targets)} match no module of {type(module).__name__}"
        )
    config = LoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.targets),
        bias="none",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        inject_adapter_in_model(config, module)
    return [p for name, p in module.named_parameters() if "lora_" in name]
