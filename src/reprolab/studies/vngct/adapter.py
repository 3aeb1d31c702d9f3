"""The model VNG-CT trains: a LLaVA model seen as language, visual and calibration paths.

`MLLMAdapter` wraps a `transformers` `LlavaForConditionalGeneration` (a tiny random one at
smoke scale, a local checkpoint at paper scale) and exposes what continual tuning needs:

* three parameter groups — the language path (the Llama model with its embeddings and
  `lm_head`), the visual path (`multi_modal_projector`) and the calibration path (a
  question-conditioned scale of the visual tokens, `CalibrationScale`, ~5k parameters);
* `tower_features`: the frozen vision tower's patch features (CLIP's CLS dropped, as
  ``vision_feature_select_strategy="default"``), which the training loop computes once per
  image because the tower never changes after alignment;
* `forward`: logits for token ids whose ``<image>`` positions are filled with the projected
  (and scaled) visual tokens, where the caller may *route* gradients: per sample, the
  projector sees the sample only where the visual gate is 1 and the calibration scale only
  where it is 0 (`route`, with the gate in a `GateSlot` that may be filled after the
  forward). Forward values never change with the gate.

Choices: the calibration scale is ``s = 2·σ(MLP(mean of the question's token embeddings,
detached))`` with the MLP's last layer zero-initialised, so ``s == 1.0`` exactly until it is
trained and a model without the calibration path computes bit for bit what one with it does
at initialisation. The whole tower stays frozen (the card's optional LoRA on the tower is not
built). With `lora` (paper scale), `peft` LoRA adapters on the language model's attention
projections are the language path and its own weights stay frozen (`reprolab.models.lora`).
The adapter works on the device and dtype its model was loaded with: pixel values are cast to
the tower's, the calibration scale runs in float32 and gates follow the gradients' device.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import LlavaForConditionalGeneration

from reprolab.models.lora import LoRA, add_lora


class CalibrationScale(nn.Module):
    """``s(q) = 2·σ(MLP(q))`` per sample, exactly 1.0 at initialisation."""

    def __init__(self, hidden: int, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(hidden, width), nn.Tanh(), nn.Linear(width, 1))
        nn.init.zeros_(self.net[2].weight)
        nn.init.zeros_(self.net[2].bias)

    def forward(self, question: torch.Tensor) -> torch.Tensor:
        """Scale per sample, shape ``[B, 1, 1]``, from detached question embeddings ``[B, H]``."""
        return (2.0 * torch.sigmoid(self.net(question)))[:, :, None]


class GateSlot:
    """A per-sample gate ``[B]`` that the backward pass reads; it may be set after the forward.

    Holding the gate outside the graph lets one forward pass serve both the necessity
    estimate and the training loss: the gate is computed from that forward's losses and put
    here before `backward` (the design card's "reuse the training forward's value").
    """

    def __init__(self, gate: torch.Tensor | None = None) -> None:
        self.gate = gate


class _Routed(torch.autograd.Function):
    """Identity forward; backward multiplies each sample's gradient by its gate (or 1 − gate)."""

    @staticmethod
    def forward(ctx, values: torch.Tensor, slot: GateSlot, invert: bool) -> torch.Tensor:
        ctx.slot, ctx.invert = slot, invert
        return values.view_as(values)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        gate = ctx.slot.gate
        if gate is None or gate.shape != grad.shape[:1]:
            raise RuntimeError(
                f"gate slot holds {None if gate is None else tuple(gate.shape)}, "
                f"expected one gate per sample ({grad.shape[0]},) before backward"
            )
        gate = gate.to(grad.device, grad.dtype).reshape((-1,) + (1,) * (grad.dim() - 1))
        return grad * (1.0 - gate if ctx.invert else gate), None, None


def route(values: torch.Tensor, slot: GateSlot, invert: bool = False) -> torch.Tensor:
    """`values` unchanged; in the backward, sample i's gradient is scaled by ``g_i``.

    With `invert`, by ``1 − g_i``: the calibration path learns from the samples the visual
    path does not.
    """
    return _Routed.apply(values, slot, invert)


class MLLMAdapter(nn.Module):
    """A LLaVA model seen as language, visual and calibration paths (see the module docstring)."""

    def __init__(
        self,
        model: LlavaForConditionalGeneration,
        calibration_width: int = 32,
        lora: LoRA | None = None,
        lora_seed: int = 0,
    ) -> None:
        super().__init__()
        self.model = model
        self.image_token_id = model.config.image_token_index
        hidden = model.config.text_config.hidden_size
        self.calibration = CalibrationScale(hidden, calibration_width).to(model.device)
        for parameter in self.model.model.vision_tower.parameters():
            parameter.requires_grad_(False)
        if lora is not None and lora.enabled:
            add_lora(self.model.model.language_model, lora, lora_seed)
            self.model.model.language_model.to(model.device)
            for parameter in self.model.lm_head.parameters():
                parameter.requires_grad_(False)

    def language_parameters(self) -> list[nn.Parameter]:
        """θ_L: the trainable part of the language model and `lm_head` (all of it without LoRA,
        the LoRA adapters with it)."""
        language = [*self.model.model.language_model.parameters(), *self.model.lm_head.parameters()]
        return [parameter for parameter in language if parameter.requires_grad]

    def visual_parameters(self) -> list[nn.Parameter]:
        """θ_V: the multimodal projector."""
        return list(self.model.model.multi_modal_projector.parameters())

    def calibration_parameters(self) -> list[nn.Parameter]:
        """φ: the calibration scale's MLP."""
        return list(self.calibration.parameters())

    @torch.no_grad()
    def tower_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """Frozen vision-tower patch features ``[B, tokens, vision_hidden]`` (CLS dropped)."""
        config = self.model.config
        tower = self.model.model.vision_tower
        pixel_values = pixel_values.to(tower.device, tower.dtype)
        output = tower(pixel_values, output_hidden_states=True)
        features = output.hidden_states[config.vision_feature_layer]
        if config.vision_feature_select_strategy == "default":
            features = features[:, 1:]
        return features

    def visual_tokens(self, features: torch.Tensor) -> torch.Tensor:
        """Projected visual tokens ``[B, tokens, hidden]`` of tower `features`."""
        return self.model.model.multi_modal_projector(features)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        features: torch.Tensor,
        calibrate: bool = False,
        routing: GateSlot | None = None,
    ) -> torch.Tensor:
        """Logits ``[B, T, vocab]``; the ``<image>`` positions hold the visual tokens of `features`.

        `calibrate` applies the calibration scale. `routing` routes gradients by its gate: the
        projector learns from samples with gate 1, the calibration scale from those with 0.
        """
        embed = self.model.get_input_embeddings()
        embeddings = embed(input_ids)
        is_image = input_ids == self.image_token_id
        tokens = self.visual_tokens(features)
        if routing is not None:
            tokens = route(tokens, routing)
        if calibrate:
            is_text = (attention_mask.bool() & ~is_image).unsqueeze(-1).to(embeddings.dtype)
            question = (embeddings * is_text).sum(1) / is_text.sum(1).clamp(min=1.0)
            scale = self.calibration(question.detach().float())
            if routing is not None:
                scale = route(scale, routing, invert=True)
            tokens = scale * tokens
        if int(is_image.sum()) != tokens.shape[0] * tokens.shape[1]:
            raise ValueError(
                f"{int(is_image.sum())} <image> token positions for "
                f"{tokens.shape[0]} images × {tokens.shape[1]} tokens"
            )
        embeddings = embeddings.masked_scatter(is_image.unsqueeze(-1), tokens.to(embeddings.dtype))
        return self.model(inputs_embeds=embeddings, attention_mask=attention_mask).logits
