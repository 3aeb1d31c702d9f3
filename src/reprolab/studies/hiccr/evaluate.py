"""A checkpoint's accuracy and its three grounding metrics on a split, the table's columns.

* `accuracy`: greedy answers the split's verifier accepts.
* `dependence` (functional): accuracy minus the accuracy when each item's image embeddings are
  replaced by those of the next item (a real image of the same distribution, not a blank one,
  so the model sees nothing out of distribution; the text is unchanged).
* `attention`: mean image attention mass (`grounding.image_attention_mass`, last `last_layers`
  layers) at the reading tokens of the reference answers (the split's `reading`: VisArith's
  digits after "see", else every answer token), teacher forced, so every checkpoint is measured
  on the same token sequences.
* `gradient_share`: mean share of the squared gradient of the reading tokens' log-probability
  with respect to the input embeddings that falls on the image embeddings
  (`grounding.image_gradient_share`), the confidence-controlled form of gradient attribution.

`sampled_accuracy` measures answers sampled at a temperature instead of greedy ones. Items are
processed in batches of up to `batch_size` items sharing a question (their prompt layout);
nothing here changes the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from transformers import PreTrainedTokenizerFast

from reprolab.studies.hiccr.data import Split, question_groups
from reprolab.studies.hiccr.grounding import image_attention_mass, image_gradient_share
from reprolab.studies.hiccr.policy import VisionPolicy
from reprolab.studies.hiccr.train import rewards


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


def _batches(split: Split, size: int) -> list[torch.Tensor]:
    """Item indices in batches of up to `size` sharing a question: consecutive runs of one
    group (VisArith: the whole split is one group, cut every `size` items)."""
    batches = []
    for group in question_groups(split.questions, range(len(split))):
        batches += [torch.tensor(group[at : at + size]) for at in range(0, len(group), size)]
    return batches


def reading_sum(
    values: torch.Tensor, answers: torch.Tensor, split: Split, eos: int
) -> torch.Tensor:
    """[B] sums of `values` [B, T] over the reading tokens of the teacher-forced `answers`
    [B, T]: the split's `reading` positions, or every token before the first end token."""
    if split.reading is not None:
        return values[:, split.reading].sum(1)
    before_end = torch.cumsum((answers == eos).int(), 1) == 0
    return (values * before_end.to(values.device, values.dtype)).sum(1)


def reading_count(answers: torch.Tensor, split: Split, eos: int) -> torch.Tensor:
    """[B] numbers of reading tokens of `answers` (at least 1: an empty answer reads nothing)."""
    if split.reading is not None:
        return torch.full((len(answers),), float(len(range(answers.shape[1])[split.reading])))
    return (torch.cumsum((answers == eos).int(), 1) == 0).sum(1).clamp_min(1).float()


def evaluate(
    policy: VisionPolicy,
    tokenizer: PreTrainedTokenizerFast,
    split: Split,
    answers: torch.Tensor,
    batch_size: int,
    last_layers: int,
) -> Grounding:
    """The metrics of the module docstring for `split`, whose reference answers tokenise to
    `answers` [N, T] (padded with end tokens where their lengths differ)."""
    policy.model.eval()
    hits = blind = attention = share = 0.0
    eos = policy.eos_id
    for part in _batches(split, batch_size):
        view = policy.for_question(split.questions[int(part[0])])
        pixels, teacher_answers = split.pixels[part], answers[part]
        references = [split.references[i] for i in part.tolist()]
        counts = reading_count(teacher_answers, split, eos).to(view.device)
        with torch.no_grad():
            tokens = view.image_tokens(pixels)
            greedy = view.sample(tokens, None)
            hits += float(rewards(tokenizer, greedy, references, split.verify).sum())
            following = part.add(1).remainder(len(split))
            swapped = view.sample(view.image_tokens(split.pixels[following]), None)
            blind += float(rewards(tokenizer, swapped, references, split.verify).sum())
            teacher = view.response_logprobs(pixels, teacher_answers, attentions=True)
            image = view.image_mask(len(part))
            mass = image_attention_mass(teacher.attentions, image, view.prompt_length, last_layers)
            attention += float((reading_sum(mass, teacher_answers, split, eos) / counts).sum())
        embeddings = view.sequence_embeddings(tokens, teacher_answers).requires_grad_(True)
        logp = view.response_logprobs_from_embeddings(embeddings, teacher_answers).logp
        read = reading_sum(logp, teacher_answers, split, eos).sum()
        (gradient,) = torch.autograd.grad(read, embeddings)
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
        for part in _batches(split, batch_size):
            view = policy.for_question(split.questions[int(part[0])])
            responses = view.sample(view.image_tokens(split.pixels[part]), generator, temperature)
            references = [split.references[i] for i in part.tolist()]
            hits += float(rewards(tokenizer, responses, references, split.verify).sum())
    return hits / len(split)
