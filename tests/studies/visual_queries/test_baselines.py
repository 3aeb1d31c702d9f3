"""Benchmark checks on the real pipeline's corpus: the oracle is perfect, the blind are blind."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.visual_queries import baselines
from reprolab.studies.visual_queries.dataset import build_items, split

from .conftest import PARAMS, TRAINED

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def splits(corpus):
    videos = split(corpus.names, 0, PARAMS["n_test"])
    return {name: build_items(corpus, v, 0, PARAMS["items"])[0] for name, v in videos.items()}


@pytest.mark.parametrize("mode", ["text", "visual"])
def test_oracle_is_perfect_in_both_modes(splits, mode):
    items = splits["test"] + splits["train"]
    answers = baselines.oracle(items, mode)
    assert (answers == [item.answer_idx for item in items]).all()


def test_oracle_refuses_an_item_with_two_true_options(splits):
    item = splits["test"][0]
    broken = type(item)(**{**item.__dict__, "options": (item.truth,) * 4})
    assert baselines.oracle([broken], "text")[0] == -1


def _leaky(item):
    """The item with a planted shortcut: only the true option has a sprite top-left."""

    def moved(state, cell):
        return tuple(
            sorted(
                (s, c, cell if k == 0 else (g if g != 0 else 1))
                for k, (s, c, g) in enumerate(state)
            )
        )

    options = tuple(
        moved(state, 0) if k == item.answer_idx else moved(state, 2)
        for k, state in enumerate(item.options)
    )
    return type(item)(**{**item.__dict__, "options": options, "truth": options[item.answer_idx]})


def test_blind_text_finds_a_planted_template_leak(splits):
    """The no-shortcut check can fail: a cue in the answer's sentence is found at once."""
    train = [_leaky(i) for i in splits["train"]]
    test = [_leaky(i) for i in splits["test"]]
    answers = baselines.blind_text(train, test)
    assert (answers == [i.answer_idx for i in test]).mean() > 0.9


def test_blind_visual_and_pixel_nn_answer_every_item(corpus, splits):
    test = splits["test"]
    visual = baselines.blind_visual(splits["train"], test, corpus, 0, TRAINED)
    assert visual.shape == (len(test),) and set(np.unique(visual)) <= {0, 1, 2, 3}
    for mode in ("text", "visual"):
        picks = baselines.pixel_nn(test, corpus, mode, 0, PARAMS["render"])
        assert picks.shape == (len(test),)


@pytest.mark.parametrize("mode", ["text", "visual"])
def test_blind_set_picks_the_option_at_the_centre_of_its_set(corpus, splits, mode):
    """Three distractors that each differ from the answer in one sprite, and from each other in
    two: the centroid rule must find the answer without the video."""
    item = splits["test"][0]
    answer = item.truth
    options = [answer]
    for k in range(3):
        shape, colour, cell = answer[k % len(answer)]
        moved = list(answer)
        moved[k % len(answer)] = (shape, (colour + 1 + k) % 6, (cell + 3 + k) % 9)
        options.append(tuple(sorted(moved)))
    centred = type(item)(**{**item.__dict__, "options": tuple(options), "answer_idx": 0})
    assert baselines.blind_set([centred], corpus, mode, 0, PARAMS["render"])[0] == 0
