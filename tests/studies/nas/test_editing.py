"""The editors' algebra (MEMIT's update solves its least-squares problem, ROME's maps its key
exactly and spares C⁻¹-orthogonal keys, NAS changes only the norm) and an edit of a trained
fact LM that changes the fact it targets and leaves the other subjects' facts."""

from __future__ import annotations

import pytest
import torch

from reprolab.models.fact_lm import fact_tokenizer, object_ids
from reprolab.models.facts import query
from reprolab.studies.nas.editing import (
    DeltaSolver,
    anchor_scaled,
    covariance,
    hidden_and_value,
    memit_delta,
    memit_edit,
    rome_delta,
    solve_delta,
    value_matrix,
)
from reprolab.studies.nas.prompts import edit_batch
from reprolab.studies.nas.world_stream import world_openings, world_request
from tests.studies.nas.conftest import WORLD


def spd(size: int, generator: torch.Generator) -> torch.Tensor:
    """A random symmetric positive definite matrix (float64)."""
    factor = torch.randn(size, size, generator=generator, dtype=torch.float64)
    return factor @ factor.T / size + 0.1 * torch.eye(size, dtype=torch.float64)


def test_memit_update_is_the_least_squares_solution_of_the_stacked_system():
    generator = torch.Generator().manual_seed(0)
    keys = torch.randn(6, 12, generator=generator, dtype=torch.float64)
    residuals = torch.randn(6, 5, generator=generator, dtype=torch.float64)
    moment, weight = spd(12, generator), 0.7
    root = torch.linalg.cholesky(moment).T
    stacked = torch.cat([keys, weight**0.5 * root])
    wanted = torch.cat([residuals, torch.zeros(12, 5, dtype=torch.float64)])
    expected = torch.linalg.lstsq(stacked, wanted).solution
    torch.testing.assert_close(memit_delta(keys, residuals, moment, weight), expected)


def test_rome_maps_its_key_exactly_and_spares_c_orthogonal_keys():
    generator = torch.Generator().manual_seed(1)
    moment = spd(10, generator)
    matrix = torch.randn(10, 4, generator=generator, dtype=torch.float64)
    key = torch.randn(10, generator=generator, dtype=torch.float64)
    wanted = torch.randn(4, generator=generator, dtype=torch.float64)
    update = rome_delta(key, wanted, matrix, moment)
    torch.testing.assert_close(key @ (matrix + update), wanted)
    other = torch.randn(10, generator=generator, dtype=torch.float64)
    direction = torch.linalg.solve(moment, key)
    other = other - (other @ direction) / (direction @ direction) * direction
    torch.testing.assert_close(other @ (matrix + update), other @ matrix)


def test_nas_rescales_to_the_anchor_and_keeps_the_direction():
    vstar = torch.tensor([[3.0, 4.0, 0.0], [0.0, -1.0, 1.0]])
    scaled = anchor_scaled(vstar, 2.5)
    torch.testing.assert_close(scaled.norm(dim=1), torch.full((2,), 2.5))
    torch.testing.assert_close(torch.cosine_similarity(scaled, vstar, dim=1), torch.ones(2))


@pytest.fixture(scope="module")
def fact_lm(fact_lm_dir):
    from transformers import GPT2LMHeadModel

    return GPT2LMHeadModel.from_pretrained(fact_lm_dir), fact_tokenizer(WORLD)


def predicted_object(model, tokenizer, subject: int, relation: int) -> int:
    """The index of the relation's object the model ranks first after the query."""
    inputs = tokenizer([query(WORLD, subject, relation, 0)], return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs).logits[0, -1]
    candidates = object_ids(tokenizer, WORLD.relations[relation].objects)
    return int(logits[candidates].argmax())


def test_a_memit_edit_changes_the_target_fact_and_spares_the_others(fact_lm):
    model, tokenizer = fact_lm
    subject, relation = 9, 1
    new = (int(WORLD.facts[subject, relation]) + 1) % 4
    current = int(WORLD.facts[subject, relation])
    request = world_request(WORLD, "edit", subject, relation, 0, new, current, [])
    batch = edit_batch(tokenizer, [request], world_openings(WORLD, 3, seed=0))
    layers = [0, 1]
    sentences = [query(WORLD, s, r, 0) for s in range(16) for r in range(2)]
    moments = [covariance(model, layer, sentences, tokenizer, ridge=0.01) for layer in layers]
    before = value_matrix(model, 1).detach().clone()
    delta = solve_delta(model, 1, batch, 1, DeltaSolver(60, 1.0, 4.0, 1e-3))
    hidden, _ = hidden_and_value(model, 1, batch, 1)
    memit_edit(model, layers, batch, hidden + delta, moments, weight=0.1)
    assert not torch.equal(value_matrix(model, 1), before)
    assert predicted_object(model, tokenizer, subject, relation) == new
    spared = [
        predicted_object(model, tokenizer, s, r) == int(WORLD.facts[s, r])
        for s in range(16)
        for r in range(2)
        if s != subject
    ]
    assert sum(spared) / len(spared) >= 0.9


def test_the_solver_stops_once_the_new_answer_is_likely_enough(fact_lm):
    model, tokenizer = fact_lm
    subject, relation = 12, 0  # a fact the edit test above leaves alone
    new = (int(WORLD.facts[subject, relation]) + 1) % 4
    request = world_request(WORLD, "edit", subject, relation, 0, new, 0, [])
    batch = edit_batch(tokenizer, [request], world_openings(WORLD, 3, seed=0))
    never = solve_delta(model, 1, batch, 1, DeltaSolver(20, 1.0, 4.0, 1e-3, stop_nll=0.0))
    at_once = solve_delta(model, 1, batch, 1, DeltaSolver(20, 1.0, 4.0, 1e-3, stop_nll=1e9))
    early = solve_delta(model, 1, batch, 1, DeltaSolver(20, 1.0, 4.0, 1e-3, stop_nll=0.5))
    assert torch.count_nonzero(at_once) == 0  # below the threshold before the first step
    assert not torch.equal(early, never) and torch.count_nonzero(early) > 0
