"""GPT and nGPT: shapes, nGPT's invariants (unit weights and hidden states, kept by
`normalize_weights` after an optimiser step), rotary embeddings, and the recipe switch."""

from __future__ import annotations

import pytest
import torch

from reprolab.core.determinism import seed_everything
from reprolab.studies.ngpt_fp4.models import CharLM, LMConfig, normalize_weights, rotary
from reprolab.studies.ngpt_fp4.nvfp4 import NVFP4Linear, recipe_named

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def model(normalized: bool, seed: int = 0) -> CharLM:
    seed_everything(seed, 1)
    return CharLM(
        LMConfig(vocab=20, hidden=32, layers=2, heads=2, context=16, normalized=normalized)
    )


def tokens(seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 20, (2, 16), generator=torch.Generator().manual_seed(seed))


def sphere_vectors(lm: CharLM) -> list[torch.Tensor]:
    """Norms of every vector nGPT keeps on the sphere."""
    norms = [lm.embedding.weight.norm(dim=1), lm.head.weight.norm(dim=1)]
    for block in lm.blocks:
        attention, mlp = block.attention, block.mlp
        for reading in (attention.qkv, mlp.up):
            norms.append(reading.weight.norm(dim=1))
        for writing in (attention.out, mlp.down):
            norms.append(writing.weight.norm(dim=0))
    return norms


@pytest.mark.parametrize("normalized", [False, True])
def test_logits_have_the_vocabulary_shape_and_training_lowers_the_loss(normalized: bool):
    lm = model(normalized)
    batch = tokens()
    optimiser = torch.optim.Adam(lm.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        logits = lm(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 20), batch[:, 1:].reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if normalized:
            normalize_weights(lm)
        losses.append(loss.item())
    assert logits.shape == (2, 15, 20)
    assert losses[-1] < 0.8 * losses[0]


def test_ngpt_keeps_weights_and_hidden_states_on_the_sphere():
    lm = model(True)
    for norms in sphere_vectors(lm):
        torch.testing.assert_close(norms, torch.ones_like(norms))
    optimiser = torch.optim.Adam(lm.parameters(), lr=1e-2)
    lm(tokens()).pow(2).mean().backward()
    optimiser.step()
    assert any((norms - 1).abs().max() > 1e-3 for norms in sphere_vectors(lm))
    normalize_weights(lm)
    for norms in sphere_vectors(lm):
        torch.testing.assert_close(norms, torch.ones_like(norms))
    states = []
    for block in lm.blocks:
        block.register_forward_hook(lambda _m, _i, out: states.append(out.norm(dim=-1)))
    lm(tokens(1))
    for norms in states:
        torch.testing.assert_close(norms, torch.ones_like(norms))


def test_rotary_keeps_norms_and_scores_depend_on_relative_position():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(1, 1, 1, 8, generator=generator).expand(1, 1, 12, 8)
    k = torch.randn(1, 1, 1, 8, generator=generator).expand(1, 1, 12, 8)
    rq, rk = rotary(q), rotary(k)
    torch.testing.assert_close(rq.norm(dim=-1), q.norm(dim=-1))
    scores = rq[0, 0] @ rk[0, 0].T
    torch.testing.assert_close(scores[3, 1], scores[7, 5])
    torch.testing.assert_close(scores[9, 2], scores[10, 3])


def test_the_recipe_reaches_every_block_linear_and_changes_the_output():
    lm = model(False)
    batch = tokens()
    full = lm(batch)
    lm.set_recipe(recipe_named("nvfp4", 16.0))
    linears = [m for m in lm.modules() if isinstance(m, NVFP4Linear)]
    assert len(linears) == 2 * 4 and all(m.recipe == recipe_named("nvfp4", 16.0) for m in linears)
    quantised = lm(batch)
    assert not torch.equal(full, quantised) and torch.isfinite(quantised).all()
