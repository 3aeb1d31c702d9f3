"""TinyVLM: frozen encoders stay frozen, the frame cache changes nothing, seeds reproduce."""

from __future__ import annotations

import copy

import pytest
import torch

from reprolab.studies.visual_queries import tinyvlm
from reprolab.studies.visual_queries.dataset import build_items, split
from reprolab.studies.visual_queries.models import TinyVLM
from reprolab.studies.visual_queries.text import build_vocabulary

from .conftest import PARAMS, TRAINED

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def data(corpus):
    videos = split(corpus.names, 0, PARAMS["n_test"])
    train, _ = build_items(corpus, videos["train"], 0, PARAMS["items"])
    test, _ = build_items(corpus, videos["test"], 0, PARAMS["items"])
    vocabulary = build_vocabulary(item.question for item in train + test)
    return videos, train, test, vocabulary


def _params(freeze: bool) -> dict:
    params = copy.deepcopy(TRAINED)
    params["tinyvlm"]["tune"]["freeze_encoders"] = freeze
    return params


def _state(model: TinyVLM) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("freeze", [True, False])
def test_tuning_moves_only_what_it_should(corpus, data, freeze):
    videos, train, _, vocabulary = data
    params = _params(freeze)
    torch.manual_seed(0)
    model = TinyVLM(len(vocabulary), corpus.spec.frames, corpus.spec.size, dim=16, heads=2)
    before = _state(model)
    tinyvlm.tune(model, corpus, train, vocabulary, 0, 0.5, params, show_progress=False)
    after = model.state_dict()
    encoder_moved = any(
        not torch.equal(before[k], after[k]) for k in before if k.split(".")[0] in tinyvlm.ENCODERS
    )
    head_moved = not torch.equal(before["where.weight"], after["where.weight"])
    assert head_moved
    assert encoder_moved is not freeze


def test_frame_cache_gives_the_same_scores_as_encoding(corpus, data):
    _, _, test, vocabulary = data
    torch.manual_seed(1)
    model = TinyVLM(len(vocabulary), corpus.spec.frames, corpus.spec.size, dim=16, heads=2).eval()
    cache = tinyvlm.frame_cache(model, corpus)
    items = test[:6]
    for visual in (False, True):
        batch = tinyvlm.make_batch(
            items, corpus, visual, vocabulary, PARAMS["lengths"], 0, PARAMS["render"]
        )
        with torch.no_grad():
            direct = tinyvlm.scores(model, batch, items, None)
            cached = tinyvlm.scores(model, batch, items, cache)
        torch.testing.assert_close(direct, cached)


def test_training_is_reproducible(corpus, data):
    videos, train, test, vocabulary = data
    runs = []
    for _ in range(2):
        torch.manual_seed(2)
        model, curves, cache = tinyvlm.train_tinyvlm(
            corpus, train, videos["train"], vocabulary, 0, 0.5, TRAINED
        )
        runs.append(
            (curves, tinyvlm.answer(model, test, corpus, True, vocabulary, 0, PARAMS, cache))
        )
    assert runs[0][0] == runs[1][0]
    assert (runs[0][1] == runs[1][1]).all()
    assert len(runs[0][0]["align"]) == PARAMS["tinyvlm"]["align"]["steps"]
