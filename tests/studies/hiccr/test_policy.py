"""hiccr's policy view of a tiny LLaVA: embeddings-path log-probabilities equal the model's own
pixel path, sampling is seeded, greedy and masked, and the response mask stops at the first end
token."""

from __future__ import annotations

import pytest
import torch

from reprolab.studies.hiccr.data import prompt_ids
from reprolab.studies.hiccr.policy import VisionPolicy


def pixels(seed: int, batch: int = 5) -> torch.Tensor:
    return torch.randn(batch, 3, 16, 16, generator=torch.Generator().manual_seed(seed))


def test_embedding_path_gives_the_models_own_log_probabilities(policy: VisionPolicy):
    images = pixels(0)
    responses = policy.sample(policy.image_tokens(images), torch.Generator().manual_seed(0))
    ours = policy.response_logprobs(images, responses, attentions=True)
    ids = torch.cat([policy.prompt_ids.expand(len(images), -1), responses], 1)
    logits = policy.model(input_ids=ids, pixel_values=images).logits
    start = policy.prompt_length
    theirs = torch.log_softmax(logits[:, start - 1 : -1].float() + policy.bias, -1)
    theirs = theirs.gather(-1, responses[..., None])[..., 0]
    assert torch.allclose(ours.logp, theirs, atol=1e-6)
    assert len(ours.attentions) == 2
    length = start + policy.response_length
    assert ours.attentions[0].shape == (5, 2, length, length)


def test_sampling_repeats_with_the_seed_and_never_draws_a_banned_token(policy: VisionPolicy):
    tokens = policy.image_tokens(pixels(1, batch=64))
    first = policy.sample(tokens, torch.Generator().manual_seed(3))
    again = policy.sample(tokens, torch.Generator().manual_seed(3))
    other = policy.sample(tokens, torch.Generator().manual_seed(4))
    assert torch.equal(first, again) and not torch.equal(first, other)
    banned = torch.isinf(policy.bias).nonzero()[:, 0]
    assert not torch.isin(first, banned).any()
    assert not torch.isin(other, banned).any()


def test_greedy_sampling_takes_the_most_likely_token_at_every_step(policy: VisionPolicy):
    images = pixels(2)
    tokens = policy.image_tokens(images)
    greedy = policy.sample(tokens, None)
    embeddings = policy.sequence_embeddings(tokens, greedy)
    logits = policy.model(inputs_embeds=embeddings).logits[:, policy.prompt_length - 1 : -1]
    assert torch.equal((logits.float() + policy.bias).argmax(-1), greedy)


def test_response_mask_keeps_tokens_up_to_the_first_end_token(policy: VisionPolicy):
    eos = policy.eos_id
    responses = torch.tensor([[7, eos, 8, eos, 9, 9], [7, 8, 9, 9, 9, 9], [eos, 7, 7, 7, 7, 7]])
    expected = torch.tensor(
        [[1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0]], dtype=torch.bool
    )
    assert torch.equal(policy.response_mask(responses), expected)


def test_prompts_must_hold_as_many_image_places_as_image_tokens(policy: VisionPolicy):
    with pytest.raises(ValueError, match="image tokens for 4"):
        policy.prompt_embeddings(torch.zeros(2, 3, 32))
    with pytest.raises(ValueError, match="no <image>"):
        VisionPolicy(policy.model, torch.tensor([1, 7, 8]), 6, policy.eos_id, [])


def test_a_question_gets_its_own_prompt_on_the_same_model(policy: VisionPolicy, tokenizer):
    assert policy.for_question("anything") is policy  # one layout: no prompter
    ask = prompt_ids(tokenizer, 4, "add the digits", "{image} see {question}")

    def prompter(question: str) -> torch.Tensor:
        return prompt_ids(tokenizer, 4, question, "{image} see {question}")

    asking = VisionPolicy(policy.model, ask, policy.response_length, policy.eos_id, [0], prompter)
    view = asking.for_question("add the digits , so")
    assert view.model is asking.model and view.bias is asking.bias
    assert view.prompt_length == asking.prompt_length + 2
    assert asking.for_question("add the digits , so") is view
    assert view.for_question("add the digits") is asking.for_question("add the digits")
    images = pixels(1, 2)
    responses = view.sample(view.image_tokens(images), torch.Generator().manual_seed(0))
    assert view.response_logprobs(images, responses).logp.shape == responses.shape
