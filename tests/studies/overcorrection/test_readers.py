"""The readers: the linear reader computes its formula, the readout keys and queries give each
reader's own attention scores (the GPT-2's logits per head), the pool keys are what the reader
would compute for an item alone, training is byte-identical for a seed and lowers the loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.core.determinism import seed_everything
from reprolab.studies.overcorrection.correction import head_scores
from reprolab.studies.overcorrection.icl_data import draw_prior, training_prompts
from reprolab.studies.overcorrection.readers import (
    LinearAttentionReader,
    SoftmaxReader,
    as_tensors,
    train_reader,
)

PRIOR = draw_prior(np.random.default_rng(0))
PROMPTS = training_prompts(np.random.default_rng(1), PRIOR, 6, 5, 0.5, 0.1)
TINY_GPT2 = {"layers": 2, "hidden": 16, "heads": 4, "context": 16}


def linear_reader(seed: int = 0) -> LinearAttentionReader:
    """A freshly initialised linear reader, torch seeded and on one thread."""
    seed_everything(seed, 1)
    return LinearAttentionReader()


def softmax_reader(seed: int = 0) -> SoftmaxReader:
    """A freshly initialised tiny GPT-2 reader, torch seeded and on one thread."""
    seed_everything(seed, 1)
    return SoftmaxReader(**TINY_GPT2)


def weights(reader: LinearAttentionReader) -> dict[str, np.ndarray]:
    """The linear reader's weights in float64."""
    return {name: value.detach().double().numpy() for name, value in reader.named_parameters()}


def test_the_linear_reader_computes_its_formula_from_its_weights():
    reader = linear_reader()
    w = weights(reader)
    x, y, x_query = PROMPTS.x, PROMPTS.y, PROMPTS.x_query
    z = np.concatenate([x, y], -1)
    scores = np.einsum("bnm,bm->bn", z @ w["w_key"].T, x_query @ w["w_query"].T)
    by_hand = x_query @ w["skip"].T + np.einsum("bn,bnp->bp", scores, z @ w["w_value"].T)
    answers = reader.predict(x, y, x_query)
    assert answers.dtype == np.float64 and answers.shape == (6, 4)
    np.testing.assert_allclose(answers, by_hand, rtol=1e-5, atol=1e-5)


def test_the_linear_readers_keys_and_queries_are_its_projections():
    reader = linear_reader()
    w = weights(reader)
    x, y, x_query = PROMPTS.x, PROMPTS.y, PROMPTS.x_query
    keys, query = reader.readout_keys_queries(x, y, x_query)
    np.testing.assert_allclose(keys, np.concatenate([x, y], -1) @ w["w_key"].T, atol=1e-5)
    np.testing.assert_allclose(query, x_query @ w["w_query"].T, atol=1e-5)
    cached = reader.pool_keys(x[0], y[0], x_query[0])
    np.testing.assert_allclose(cached.keys, keys[0], atol=1e-6)
    np.testing.assert_allclose(cached.query, query[0], atol=1e-6)
    np.testing.assert_allclose(cached.query_key, w["w_key"][:, :8] @ x_query[0], atol=1e-5)
    np.testing.assert_allclose(cached.item_queries, x[0] @ w["w_query"].T, atol=1e-5)
    assert (reader.heads, reader.head_width) == (1, 12)


def test_the_gpt2_keys_and_query_give_its_attention_logits_per_head():
    reader = softmax_reader()
    x, y, x_query = PROMPTS.x, PROMPTS.y, PROMPTS.x_query
    keys, query = reader.readout_keys_queries(x, y, x_query)
    assert keys.shape == (6, 5, 16) and query.shape == (6, 16)
    with torch.no_grad():
        out = reader.transformer(
            inputs_embeds=reader.tokens(*as_tensors(x, y, x_query)), output_attentions=True
        )
    probs = out.attentions[-1][:, :, -1, :-1].double().numpy()  # (B, heads, items)
    over_items = probs / probs.sum(-1, keepdims=True)
    logits = head_scores(keys, query, reader.heads).transpose(0, 2, 1)
    softmax = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(over_items, softmax / softmax.sum(-1, keepdims=True), atol=1e-5)
    interleaved = np.einsum("bnwh,bwh->bhn", keys.reshape(6, 5, 4, 4), query.reshape(6, 4, 4))
    wrong = np.exp(interleaved) / np.exp(interleaved).sum(-1, keepdims=True)
    assert not np.allclose(over_items, wrong, atol=1e-3), "the heads are contiguous blocks"


def test_the_gpt2_pool_keys_are_the_readout_states_of_an_item_alone_and_the_bare_query():
    reader = softmax_reader()
    x, y, x_query = PROMPTS.x[0], PROMPTS.y[0], PROMPTS.x_query[0]
    cached = reader.pool_keys(x, y, x_query)
    for i in range(5):
        others = np.roll(np.arange(5), -i)  # item i first: causal, so it sees only itself
        keys, _ = reader.readout_keys_queries(x[None, others], y[None, others], x_query[None])
        np.testing.assert_allclose(cached.keys[i], keys[0, 0], atol=1e-5)
    block = reader.transformer.h[-1]
    with torch.no_grad():
        bare = as_tensors(np.zeros((1, 0, 8)), np.zeros((1, 0, 4)), x_query[None])
        states = reader.transformer(
            inputs_embeds=reader.tokens(*bare), output_hidden_states=True
        ).hidden_states[-2]
        q, k, _ = block.attn.c_attn(block.ln_1(states))[0, -1].double().split(16)
    np.testing.assert_allclose(cached.query, q.numpy(), atol=1e-5)
    np.testing.assert_allclose(cached.query_key, k.numpy() / 2.0, atol=1e-5)
    assert cached.item_queries.shape == (5, 16) and (reader.heads, reader.head_width) == (4, 4)


@pytest.mark.parametrize("build", [linear_reader, softmax_reader])
def test_residuals_are_the_answers_minus_the_readers_empty_context_answer(build):
    reader = build()
    x, y = PROMPTS.x[:2], PROMPTS.y[:2]
    empty = np.zeros((10, 0, 8)), np.zeros((10, 0, 4))
    expected = y - reader.predict(*empty, x.reshape(10, 8)).reshape(2, 5, 4)
    np.testing.assert_allclose(reader.residuals(x, y), expected, atol=1e-12)


def train(build, seed: int, steps: int) -> tuple[torch.nn.Module, list[float]]:
    """A reader built and trained from `seed` for a few small batches."""
    reader = build(seed)
    losses = train_reader(
        reader,
        PRIOR,
        steps=steps,
        n_max=6,
        sigma=0.5,
        noise=0.1,
        batch=32,
        lr=3e-3,
        seed=seed,
        log_every=max(1, steps // 4),
        show_progress=False,
    )
    return reader, losses


@pytest.mark.parametrize("build", [linear_reader, softmax_reader])
def test_training_is_byte_identical_for_a_seed(build):
    (one, loss_one), (two, loss_two) = train(build, 3, 4), train(build, 3, 4)
    assert loss_one == loss_two and len(loss_one) == 4
    state_one, state_two = one.state_dict(), two.state_dict()
    assert state_one.keys() == state_two.keys()
    assert all(torch.equal(state_one[name], state_two[name]) for name in state_one)
    other = train(build, 4, 4)[0].state_dict()
    assert not all(torch.equal(state_one[name], other[name]) for name in state_one)


@pytest.mark.parametrize(("build", "steps"), [(linear_reader, 400), (softmax_reader, 60)])
def test_training_lowers_the_loss_and_keeps_positions_out(build, steps):
    reader, losses = train(build, 0, steps)
    assert losses[-1] < 0.6 * losses[0]
    assert not reader.training
    if isinstance(reader, SoftmaxReader):
        assert not reader.transformer.wpe.weight.requires_grad
        assert not reader.transformer.wpe.weight.any()
