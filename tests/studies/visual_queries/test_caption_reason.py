"""Caption-then-reason: the rules are exact on true captions; the learned path runs end to end."""

from __future__ import annotations

import pytest

from reprolab.preprocess.video.synth import SceneSpec, simulate, state_at
from reprolab.studies.visual_queries import caption_reason
from reprolab.studies.visual_queries.dataset import build_items, split
from reprolab.studies.visual_queries.items import build_split

from .conftest import PARAMS, TRAINED

SPEC = SceneSpec(radius=4.5)
CFG = {"vfp_context": 8, "vfp_horizon": 6}

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.mark.parametrize("family", ["tfr", "cmd"])
def test_reasoner_on_true_captions_answers_collision_questions(family):
    """With perfect perception the collision rules are right on every item."""
    scenes = {f"v{seed:02d}": simulate(seed, SPEC) for seed in range(40)}
    items, _ = build_split(scenes, sorted(scenes), SPEC, 0, CFG)
    for item in [i for i in items if i.family == family]:
        scene = scenes[item.video]
        captions = [state_at(scene, t, SPEC.size) for t in range(item.n_frames)]
        predicted = caption_reason.predict_state(captions, family, CFG["vfp_horizon"])
        assert predicted == item.truth


def test_mismatches_count_attributes_and_missing_sprites():
    a = ((0, 1, 2), (1, 3, 4))
    assert caption_reason.mismatches(a, a) == 0
    assert caption_reason.mismatches(a, ((0, 2, 2), (1, 3, 5))) == 2
    assert caption_reason.mismatches(a, ((0, 1, 2),)) == 3


def test_extrapolation_moves_along_the_observed_cell_motion():
    captions = [((0, 0, 0),), ((0, 0, 1),), ((0, 0, 1),)]  # one column right over 2 frames
    assert caption_reason.predict_state(captions, "vfp", 4) == ((0, 0, 2),)


def test_learned_captioner_runs_through_both_modes(corpus):
    videos = split(corpus.names, 0, PARAMS["n_test"])
    test, _ = build_items(corpus, videos["test"], 0, PARAMS["items"])
    model = caption_reason.train_captioner(corpus, videos["train"], 0, TRAINED["captioner"])
    for mode in ("text", "visual"):
        answers = caption_reason.caption_reason(model, test, corpus, mode, 0, PARAMS)
        assert answers.shape == (len(test),) and answers.min() >= 0 and answers.max() <= 3
    accuracy = caption_reason.caption_accuracy(model, corpus, videos["test"])
    assert set(accuracy) == {"present", "colour", "cell"}
    assert all(0 <= v <= 100 for v in accuracy.values())
