"""A `LlavaForConditionalGeneration` seen as an RL policy over fixed-length responses.

The policy answers one prompt layout per batch with responses of exactly `response_length`
sampled tokens; everything after the first end-of-sequence token is left out by
`response_mask`. At smoke scale every item has the same prompt (`<image>` tokens then the
request); where questions differ (paper scale), `for_question` gives the view of the same model
for one question's prompt, built by the policy's `prompter`.

Choices:

* The image tokens enter as embeddings (`image_tokens`: vision tower, feature layer, projector,
  as LLaVA computes them) written into the prompt's embeddings at the `<image>` positions, and
  the model runs on `inputs_embeds`. This is the same computation as passing `pixel_values`, and
  lets the grounding metrics differentiate with respect to the image embeddings or replace them.
* Special tokens other than end-of-sequence (pad, bos, unk, `<image>`) are never sampled: their
  logits are masked in sampling and in the log-probabilities alike, so the policy being trained
  is the policy that sampled.
* Sampling runs one step per token on the key-value cache, drawing from the caller's
  `torch.Generator` (temperature `temperature`, on the model's device), or greedily.
* Inputs are moved to the model's device and the vision tower's dtype (a bfloat16 checkpoint on
  a GPU at paper scale); log-probabilities are computed in float32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import LlavaForConditionalGeneration


@dataclass
class ResponseLogprobs:
    """Log-probabilities [B, T] of the given response tokens, and the attention probabilities
    of every layer ([B, heads, L, L], None unless asked for)."""

    logp: torch.Tensor
    attentions: tuple[torch.Tensor, ...] | None


class VisionPolicy:
    """Sampling, log-probabilities and embeddings of a LLaVA model for one prompt layout."""

    def __init__(
        self,
        model: LlavaForConditionalGeneration,
        prompt_ids: torch.Tensor,
        response_length: int,
        eos_id: int,
        banned_ids: list[int],
        prompter: Callable[[str], torch.Tensor] | None = None,
    ) -> None:
        if prompt_ids.ndim != 1:
            raise ValueError(f"prompt_ids of shape {tuple(prompt_ids.shape)}: expected [P]")
        self.model = model
        self.device = model.device
        self.prompt_ids = prompt_ids.to(self.device)
        self.response_length = response_length
        self.eos_id = eos_id
        self.image_token_id = model.config.image_token_id
        self.image_positions = self.prompt_ids == self.image_token_id
        if not self.image_positions.any():
            raise ValueError("the prompt holds no <image> token")
        self.bias = torch.zeros(model.config.text_config.vocab_size, device=self.device)
        self.bias[banned_ids] = float("-inf")
        self.prompter = prompter
        self._views: dict[str, VisionPolicy] = {}

    def for_question(self, question: str) -> VisionPolicy:
        """The view of this model for `question`'s prompt (built by `prompter`, cached). Without
        a prompter the policy has one prompt layout for every item (VisArith's single request),
        and is its own view."""
        if self.prompter is None:
            return self
        if question not in self._views:
            view = VisionPolicy(
                self.model, self.prompter(question), self.response_length, self.eos_id, []
            )
            view.bias, view.prompter, view._views = self.bias, self.prompter, self._views
            self._views[question] = view
        return self._views[question]

    @property
    def prompt_length(self) -> int:
        return int(self.prompt_ids.shape[0])

    def image_tokens(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """Projected image tokens [B, I, hidden] of `pixel_values` [B, 3, H, W]."""
        config = self.model.config
        tower = self.model.model.vision_tower
        features = self.model.model.get_image_features(
            pixel_values=pixel_values.to(self.device, tower.dtype),
            vision_feature_layer=config.vision_feature_layer,
            vision_feature_select_strategy=config.vision_feature_select_strategy,
        ).pooler_output
        return torch.stack(list(features))

    def prompt_embeddings(self, image_tokens: torch.Tensor) -> torch.Tensor:
        """[B, P, hidden] embeddings of the prompt with `image_tokens` at the `<image>` places."""
        batch = image_tokens.shape[0]
        text = self.model.get_input_embeddings()(self.prompt_ids).expand(batch, -1, -1)
        slots = int(self.image_positions.sum())
        if image_tokens.shape[1] != slots:
            raise ValueError(f"{image_tokens.shape[1]} image tokens for {slots} <image> places")
        where = self.image_positions.nonzero()[:, 0]
        return text.index_copy(1, where, image_tokens.to(text.dtype))

    def sequence_embeddings(
        self, image_tokens: torch.Tensor, responses: torch.Tensor
    ) -> torch.Tensor:
        """[B, P + T, hidden] embeddings of prompt and `responses` [B, T]."""
        response = self.model.get_input_embeddings()(responses.to(self.device))
        return torch.cat([self.prompt_embeddings(image_tokens), response], 1)

    def response_logprobs_from_embeddings(
        self, embeddings: torch.Tensor, responses: torch.Tensor, attentions: bool = False
    ) -> ResponseLogprobs:
        """Log-probabilities of `responses` under the model run on `embeddings` (from
        `sequence_embeddings`, possibly with replaced or differentiable image tokens)."""
        out = self.model(inputs_embeds=embeddings, output_attentions=attentions)
        start = self.prompt_length
        logits = out.logits[:, start - 1 : -1].float() + self.bias
        targets = responses.to(self.device)[..., None]
        logp = torch.log_softmax(logits, -1).gather(-1, targets)[..., 0]
        return ResponseLogprobs(logp, tuple(out.attentions) if attentions else None)

    def response_logprobs(
        self, pixel_values: torch.Tensor, responses: torch.Tensor, attentions: bool = False
    ) -> ResponseLogprobs:
        """Log-probabilities of `responses` [B, T] given the images `pixel_values`."""
        embeddings = self.sequence_embeddings(self.image_tokens(pixel_values), responses)
        return self.response_logprobs_from_embeddings(embeddings, responses, attentions)

    def image_mask(self, batch: int) -> torch.Tensor:
        """[batch, P + T] marks of the image-token positions of a whole sequence."""
        tail = torch.zeros(self.response_length, dtype=torch.bool, device=self.device)
        return torch.cat([self.image_positions, tail]).expand(batch, -1)

    @torch.no_grad()
    def sample(
        self,
        image_tokens: torch.Tensor,
        generator: torch.Generator | None,
        temperature: float = 1.0,
    ) -> torch.Tensor:
        """[B, T] response tokens after prompts holding `image_tokens`: drawn from `generator`
        at `temperature`, or the most likely token at each step when `generator` is None."""
        out = self.model(inputs_embeds=self.prompt_embeddings(image_tokens), use_cache=True)
        tokens = []
        for step in range(self.response_length):
            logits = out.logits[:, -1].float() + self.bias
            if generator is None:
                token = logits.argmax(-1)
            else:
                probs = torch.softmax(logits / temperature, -1)
                token = torch.multinomial(probs, 1, generator=generator)[:, 0]
            tokens.append(token)
            if step + 1 < self.response_length:
                out = self.model(input_ids=token[:, None], cache=out.cache, use_cache=True)
        return torch.stack(tokens, 1)

    def response_mask(self, responses: torch.Tensor) -> torch.Tensor:
        """[B, T] marks of the tokens up to and including each response's first end token."""
        is_end = (responses == self.eos_id).int()
        return (torch.cumsum(is_end, 1) - is_end) == 0
