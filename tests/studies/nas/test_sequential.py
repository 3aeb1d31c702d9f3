"""Sequential editing (studies/nas/sequential.py) on a small trained fact LM: methods refuse an
unknown editor or anchor; the scores count the latest request of each fact in first-edit order;
the random-direction control keeps the update's Frobenius norm; a short MEMIT run logs every
norm per batch and scores at every checkpoint, and gives the same bytes from the same saved
model; NAS rescales each wanted value to the anchor norm and keeps its direction; ROME changes
the target layer's value matrix only; the anchors are the mean norms of v* and v0 on the
unedited model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from reprolab.models.fact_lm import fact_tokenizer, training_sentences
from reprolab.models.facts import arithmetic
from reprolab.studies.nas.editing import DeltaSolver, covariance, value_matrix
from reprolab.studies.nas.sequential import (
    Editing,
    Method,
    SequentialRun,
    anchor_norms,
    latest_per_fact,
    random_like,
)
from reprolab.studies.nas.world_stream import edit_stream, world_openings, world_request
from tests.studies.nas.conftest import SPEC, WORLD

EDITING = Editing(
    layers=(0, 1), weight=1.0, solver=DeltaSolver(30, 1.0, 4.0, 1e-3), batch_size=3, eval_every=3
)
STREAM = edit_stream(WORLD, 6, 3, 2, seed=0)
OPENINGS = world_openings(WORLD, 2, seed=0)
SENTENCES = training_sentences(WORLD, 256, 0.1, np.random.default_rng(0))
GENERIC = [arithmetic(np.random.default_rng(i)) for i in range(16)]
ANCHORS = {"vstar": 3.0, "value": 1.0}


def load(folder: Path):
    from transformers import GPT2LMHeadModel

    return GPT2LMHeadModel.from_pretrained(folder)


def make_run(folder: Path, method: Method, anchors: dict[str, float] | None = None):
    """A fresh model from `folder` and a run of `method` on it (covariances over the world's
    training sentences, ridge 0.01)."""
    model, tokenizer = load(folder), fact_tokenizer(WORLD)
    moments = {
        layer: covariance(model, layer, SENTENCES, tokenizer, ridge=0.01)
        for layer in EDITING.layers
    }
    run = SequentialRun(
        model, tokenizer, moments, OPENINGS, EDITING, method, anchors or ANCHORS, seed=0
    )
    return model, run


def test_methods_refuse_an_unknown_editor_or_anchor():
    with pytest.raises(ValueError, match="'ft'"):
        Method(editor="ft")
    with pytest.raises(ValueError, match="'norm'"):
        Method(editor="memit", anchor="norm")
    assert Method(editor="rome", anchor="value").anchor == "value"


def test_latest_per_fact_keeps_the_last_request_in_first_edit_order():
    def request(case: str, subject: int, relation: int, target: int):
        current = (target + 1) % 4
        return world_request(WORLD, case, subject, relation, 0, target, current, [])

    a0 = request("a0", 0, 0, 1)
    b0 = request("b0", 1, 0, 2)
    a1 = request("a1", 0, 1, 3)  # the same subject, another relation: another fact
    a0_again = request("a0'", 0, 0, 2)
    b0_again = request("b0'", 1, 0, 3)
    latest = latest_per_fact([a0, b0, a1, a0_again, b0_again])
    assert [r.case for r in latest] == ["a0'", "b0'", "a1"]
    assert latest_per_fact([]) == []


def test_random_like_keeps_the_frobenius_norm():
    generator = torch.Generator().manual_seed(3)
    update = torch.randn(12, 5, generator=generator) * 7.0
    first = random_like(update, torch.Generator().manual_seed(0))
    assert first.shape == update.shape
    assert float(first.norm()) == pytest.approx(float(update.norm()), rel=1e-5)
    cosine = float((first * update).sum() / (first.norm() * update.norm()))
    assert abs(cosine) < 0.9
    same_seed = random_like(update, torch.Generator().manual_seed(0))
    torch.testing.assert_close(first, same_seed)
    following = random_like(update, generator)
    assert not torch.allclose(following, first)
    assert float(following.norm()) == pytest.approx(float(update.norm()), rel=1e-5)


def test_a_memit_run_logs_every_batch_and_scores_every_checkpoint(fact_lm_dir):
    model, run = make_run(fact_lm_dir, Method(editor="memit"))
    result = run.run(STREAM, GENERIC, "memit", show_progress=False)
    assert set(result) == {"batches", "checkpoints"}
    batches, checkpoints = result["batches"], result["checkpoints"]
    assert len(batches) == 2
    for index, logs in enumerate(batches):
        assert set(logs) == {
            "vstar",
            "wanted",
            "delta",
            "hidden",
            "value",
            "update",
            "edits",
            "weight_norm",
        }
        assert logs["edits"] == 3 * (index + 1)
        for name in ("vstar", "wanted", "delta", "hidden", "value"):
            assert len(logs[name]) == 3 and all(v > 0 for v in logs[name])
        assert len(logs["update"]) == len(EDITING.layers)
        assert len(logs["weight_norm"]) == len(EDITING.layers)
    final = [float(value_matrix(model, layer).detach().norm()) for layer in EDITING.layers]
    assert batches[-1]["weight_norm"] == pytest.approx(final)
    assert [c["edits"] for c in checkpoints] == [3, 6]
    for scores in checkpoints:
        assert set(scores) == {
            "efficacy",
            "generalisation",
            "specificity",
            "generic_loss",
            "edits",
        }
        for name in ("efficacy", "generalisation", "specificity"):
            assert 0.0 <= scores[name] <= 1.0
        assert math.isfinite(scores["generic_loss"]) and scores["generic_loss"] > 0


def test_a_run_gives_the_same_bytes_from_the_same_saved_model(fact_lm_dir):
    results = []
    for _ in range(2):
        _, run = make_run(fact_lm_dir, Method(editor="memit", anchor="vstar"))
        results.append(json.dumps(run.run(STREAM, GENERIC, "memit", show_progress=False)))
    assert results[0] == results[1]


def test_nas_targets_have_the_anchor_norm_and_the_plain_direction(fact_lm_dir):
    _, plain = make_run(fact_lm_dir, Method(editor="memit"))
    _, scaled = make_run(fact_lm_dir, Method(editor="memit", anchor="vstar"))
    requests = STREAM[:3]
    _, wanted, goal, norms = plain.targets(requests)
    _, anchored, anchored_goal, anchored_norms = scaled.targets(requests)
    assert anchored.shape == wanted.shape == (3, SPEC["hidden"])
    torch.testing.assert_close(anchored.norm(dim=1), torch.full((3,), 3.0), atol=1e-4, rtol=0)
    cosine = torch.nn.functional.cosine_similarity(anchored, wanted, dim=1)
    torch.testing.assert_close(cosine, torch.ones(3), atol=1e-5, rtol=0)
    # the plain targets are v* itself, whose norm is logged (before any scaling) by both
    assert wanted.norm(dim=1).tolist() == pytest.approx(norms["vstar"], rel=1e-5)
    assert anchored_norms["vstar"] == pytest.approx(norms["vstar"], rel=1e-5)
    assert all(abs(n - 3.0) > 0.1 for n in norms["vstar"])
    # the residual goal moves by exactly the change of the wanted value
    torch.testing.assert_close(anchored_goal - goal, anchored - wanted, atol=1e-4, rtol=1e-4)


def test_a_rome_run_changes_the_target_layers_value_matrix_only(fact_lm_dir):
    model, run = make_run(fact_lm_dir, Method(editor="rome"))
    before = {layer: value_matrix(model, layer).detach().clone() for layer in range(4)}
    result = run.run(STREAM, GENERIC, "rome", show_progress=False)
    assert torch.equal(value_matrix(model, 0), before[0])
    assert not torch.equal(value_matrix(model, 1), before[1])
    assert torch.equal(value_matrix(model, 2), before[2])
    assert all(len(logs["update"]) == 1 and logs["update"][0] > 0 for logs in result["batches"])
    assert all(len(logs["vstar"]) == 3 for logs in result["batches"])


def test_rome_logs_the_norm_of_the_batchs_summed_update(fact_lm_dir):
    model, run = make_run(fact_lm_dir, Method(editor="rome"))
    before = value_matrix(model, 1).detach().clone()
    logs = run.edit_rome(STREAM[:3])
    summed = float((value_matrix(model, 1).detach() - before).norm())
    assert logs["update"][0] == pytest.approx(summed, rel=1e-4)


def test_anchor_norms_are_the_mean_norms_on_the_unedited_model(fact_lm_dir):
    model, run = make_run(fact_lm_dir, Method(editor="memit"))
    requests = STREAM[:3]
    anchors = anchor_norms(model, fact_tokenizer(WORLD), requests, OPENINGS, EDITING)
    assert set(anchors) == {"vstar", "value"}
    assert all(isinstance(v, float) and v > 0 for v in anchors.values())
    _, _, _, norms = run.targets(requests)
    assert anchors["vstar"] == pytest.approx(float(np.mean(norms["vstar"])), rel=1e-5)
    assert anchors["value"] == pytest.approx(float(np.mean(norms["value"])), rel=1e-5)
