"""A checkpoint's accuracy and its three grounding metrics on a split, the table's columns.

* `accuracy`: greedy answers whose conclusion is the reference's.
* `dependence` (functional): accuracy minus the accuracy when each item's image embeddings are
  replaced by those of the next item (a real image of the same distribution, not a blank one,
  so the model sees nothing out of distribution; the text is unchanged).
* `attention`: mean image attention mass (`grounding.image_attention_mass`, last `last_layers`
  layers) at the reading tokens (the digits after "see") of the reference answers, teacher
  forced, so every checkpoint is measured on the same token sequences.
* `gradient_share`: mean share of the squared gradient of the reading tokens' log-probability
  with respect to the input embeddings that falls on the image embeddings
  (`grounding.image_gradient_share`), the confidence-controlled form of gradient attribution.

`sampled_accuracy` measures answers sampled at a temperature instead of greedy ones. Items are
processed in batches of `batch_size`; nothing here changes the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from transformers import PreTrainedTokenizerFast

from reprolab.preprocess.instr.visarith import N_DIGITS
from reprolab.studies.hiccr.data import Split
from reprolab.studies.hiccr.grounding import image_attention_mass, image_gradient_share
from reprolab.studies.hiccr.policy import VisionPolicy
from reprolab.studies.hiccr.train import rewards

READING = slice(1, 1 + N_DIGITS)
"""Positions of the reading tokens in a VisArith answer: `see` then the four digits."""


@dataclass(frozen=True)
class Grounding:
    """Accuracy and grounding of one checkpoint on one split."""

    accuracy: float
    blind_accuracy: float
    dependence: float
    attention: float
    gradient_share: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def _batches(count: int, size: int) -> list[slice]:
    return [slice(start, min(start + size, count)) for start in range(0, count, size)]


def evaluate(
    policy: VisionPolicy,
    tokenizer: PreTrainedTokenizerFast,
    split: Split,
    answers: torch.Tensor,
    batch_size: int,
    last_layers: int,
) -> Grounding:
    """The metrics of the module docstring for `split`, whose reference answers tokenise to
    `answers` [N, T]."""
    policy.model.eval()
    hits = blind = attention = share = 0.0
    for part in _batches(len(split), batch_size):
        pixels, references = split.pixels[part], split.conclusions[part]
        with torch.no_grad():
            tokens = policy.image_tokens(pixels)
            hits += float(rewards(tokenizer, policy.sample(tokens, None), references).sum())
            following = torch.arange(part.start, part.stop).add(1).remainder(len(split))
            swapped = policy.sample(policy.image_tokens(split.pixels[following]), None)
            blind += float(rewards(tokenizer, swapped, references).sum())
            teacher = policy.response_logprobs(pixels, answers[part], attentions=True)
            image = policy.image_mask(len(pixels))
            mass = image_attention_mass(
                teacher.attentions, image, policy.prompt_length, last_layers
            )
            attention += float(mass[:, READING].mean(1).sum())
        embeddings = policy.sequence_embeddings(tokens, answers[part]).requires_grad_(True)
        logp = policy.response_logprobs_from_embeddings(embeddings, answers[part]).logp
        (gradient,) = torch.autograd.grad(logp[:, READING].sum(), embeddings)
        share += float(image_gradient_share(gradient, image).sum())
    count = len(split)
    accuracy, blind_accuracy = hits / count, blind / count
    return Grounding(
        accuracy=accuracy,
        blind_accuracy=blind_accuracy,
        dependence=accuracy - blind_accuracy,
        attention=attention / count,
        gradient_share=share / count,
    )


def sampled_accuracy(
    policy: VisionPolicy,
    tokenizer: PreTrainedTokenizerFast,
    split: Split,
    batch_size: int,
    temperature: float,
    generator: torch.Generator,
) -> float:
    """The share of `split`'s items whose one answer sampled at `temperature` (from
    `generator`) concludes right: the reward RL starts from."""
    policy.model.eval()
    hits = 0.0
    with torch.no_grad():
        for part in _batches(len(split), batch_size):
            tokens = policy.image_tokens(split.pixels[part])
            responses = policy.sample(tokens, generator, temperature)
            hits += float(rewards(tokenizer, responses, split.conclusions[part]).sum())
    return hits / len(split)
