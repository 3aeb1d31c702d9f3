"""hiccr's grounding signals: attention mass on image tokens (dense and from the log-sum-exp of a
fused kernel, which must agree) and the image share of the input gradient."""

from __future__ import annotations

import math

import pytest
import torch

from reprolab.studies.hiccr.grounding import (
    image_attention_mass,
    image_gradient_share,
    image_mass_from_lse,
)


def test_attention_mass_reads_the_row_that_predicts_each_response_token():
    length, start = 5, 3
    attention = torch.zeros(1, 1, length, length)
    attention[0, 0, 2] = torch.tensor([0.6, 0.1, 0.3, 0.0, 0.0])  # predicts token 3
    attention[0, 0, 3] = torch.tensor([0.2, 0.2, 0.2, 0.4, 0.0])  # predicts token 4
    attention[0, 0, 4] = torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0])  # predicts nothing
    image = torch.tensor([[True, True, False, False, False]])
    mass = image_attention_mass([attention], image, start, last_layers=1)
    assert torch.allclose(mass, torch.tensor([[0.7, 0.4]]))


def test_attention_mass_averages_heads_and_only_the_last_layers():
    first = torch.full((1, 2, 3, 3), 1 / 3)
    last = torch.zeros(1, 2, 3, 3)
    last[0, 0, :, 0], last[0, 1, :, 1] = 1.0, 1.0
    image = torch.tensor([[True, False, False]])
    only_last = image_attention_mass([first, last], image, 1, last_layers=1)
    both = image_attention_mass([first, last], image, 1, last_layers=2)
    assert torch.allclose(only_last, torch.full((1, 2), 0.5))
    assert torch.allclose(both, torch.full((1, 2), (0.5 + 1 / 3) / 2))
    with pytest.raises(ValueError, match="last_layers"):
        image_attention_mass([first], image, 1, last_layers=2)
    with pytest.raises(ValueError, match="response_start"):
        image_attention_mass([first], image, 3, last_layers=1)


def test_mass_from_the_log_sum_exp_equals_the_dense_softmax_mass():
    gen = torch.Generator().manual_seed(0)
    batch, heads, length, dim = 2, 3, 9, 8
    queries = torch.randn(batch, heads, length, dim, generator=gen, dtype=torch.float64)
    keys = torch.randn(batch, heads, length, dim, generator=gen, dtype=torch.float64)
    scale = 1 / math.sqrt(dim)
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    scores = (queries @ keys.transpose(-1, -2) * scale).masked_fill(~causal, float("-inf"))
    dense = torch.softmax(scores, -1)
    lse = torch.logsumexp(scores, -1)
    image = torch.tensor([False, True, True, True, False, False, False, False, False])
    # queries from position 4 on see every image key, as response tokens do
    expected = dense[:, :, 4:, image].sum(-1).mean(1)
    got = image_mass_from_lse(queries[:, :, 4:], keys[:, :, image], lse[:, :, 4:], scale)
    assert torch.allclose(got, expected, atol=1e-6)
    # the training path: response tokens 5..8 are predicted by query rows 4..7
    full = image_attention_mass([dense], image.expand(batch, -1), 5, last_layers=1)
    assert torch.allclose(got[:, :-1], full, atol=1e-6)


def test_gradient_share_ignores_the_scale_of_the_gradient():
    gen = torch.Generator().manual_seed(1)
    gradients = torch.randn(3, 6, 4, generator=gen)
    image = torch.tensor([True, True, False, False, False, False]).expand(3, -1)
    share = image_gradient_share(gradients, image)
    expected = gradients[:, :2].pow(2).sum((1, 2)) / gradients.pow(2).sum((1, 2))
    assert torch.allclose(share, expected)
    assert torch.allclose(image_gradient_share(7.5 * gradients, image), share)
    gradients[1] = 0.0
    assert image_gradient_share(gradients, image)[1] == 0.0
