"""No shortcut in the option set: on generated items the blind baselines sit at chance.

A property of the item generator, checked on scenes drawn directly (no mp4 round trip): 400
scenes, 200 train and 200 test videos, so each family has about 200 test items and a blind
baseline's accuracy has a binomial standard deviation of about 3 points around 25 %. The
card's distractors (perturbations of the answer) gave the option-set baseline 77 % on TFR and
CMD at smoke scale; the bound here is chance ± 3σ.
"""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.preprocess.video.synth import SceneSpec, simulate
from reprolab.studies.visual_queries import baselines
from reprolab.studies.visual_queries.dataset import Corpus
from reprolab.studies.visual_queries.items import FAMILIES, N_OPTIONS, build_split
from reprolab.studies.visual_queries.jobs import accuracy

from .conftest import PARAMS

SPEC = SceneSpec(radius=4.5)
N_SCENES, N_TEST = 400, 200
CHANCE = 100.0 / N_OPTIONS


@pytest.fixture(scope="module")
def data():
    scenes = {f"v{seed:03d}": simulate(10_000 + seed, SPEC) for seed in range(N_SCENES)}
    names = tuple(sorted(scenes))
    corpus = Corpus(np.zeros((len(names), 1, 1, 1, 3), np.uint8), names, scenes, SPEC, ())
    train, _ = build_split(scenes, names[N_TEST:], SPEC, 0, PARAMS["items"])
    test, _ = build_split(scenes, names[:N_TEST], SPEC, 0, PARAMS["items"])
    return corpus, train, test


def _near_chance(test, predicted) -> None:
    for family, value in accuracy(test, predicted).items():
        n = sum(item.family == family for item in test)
        sigma = 100.0 * np.sqrt(CHANCE / 100 * (1 - CHANCE / 100) / n)
        assert n > 150
        assert abs(value - CHANCE) <= 3 * sigma, (family, value, 3 * sigma)


@pytest.mark.parametrize("mode", ["text", "visual"])
def test_option_set_baseline_is_at_chance(data, mode):
    corpus, _, test = data
    _near_chance(test, baselines.blind_set(test, corpus, mode, 0, PARAMS["render"]))


def test_option_only_text_baseline_is_at_chance(data):
    _, train, test = data
    _near_chance(test, baselines.blind_text(train, test))


def test_the_bound_is_tight_enough_to_catch_the_card_shortcut(data):
    """An option set whose answer is its centre (the card's perturbations) is caught."""
    corpus, _, test = data
    centred = []
    for item in test:
        answer = item.truth
        options = [answer]
        for k in range(N_OPTIONS - 1):
            shape, colour, cell = answer[k % len(answer)]
            moved = list(answer)
            moved[k % len(answer)] = (shape, colour, (cell + 1 + k) % 9)
            options.append(tuple(sorted(moved)))
        centred.append(type(item)(**{**item.__dict__, "options": tuple(options), "answer_idx": 0}))
    with pytest.raises(AssertionError):
        _near_chance(centred, baselines.blind_set(centred, corpus, "text", 0, PARAMS["render"]))
    assert set(FAMILIES) == {item.family for item in test}
