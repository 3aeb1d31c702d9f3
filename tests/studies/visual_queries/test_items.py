"""Items: one true option, distinct distractors, uniform answer slots, both modes agree."""

from __future__ import annotations

import numpy as np
from scipy import stats

from reprolab.preprocess.video.synth import SceneSpec, render_state, simulate
from reprolab.studies.visual_queries.items import FAMILIES, N_OPTIONS, build_item, state_id
from reprolab.studies.visual_queries.text import state_to_text, text_to_state

SPEC = SceneSpec(radius=4.5)
CFG = {"vfp_context": 8, "vfp_horizon": 6}


def _items(n: int = 150):
    out = []
    for seed in range(n):
        scene = simulate(seed, SPEC)
        for family in FAMILIES:
            item = build_item(scene, f"v{seed}", family, SPEC, seed * 10 + len(out), CFG)
            if item is not None:
                out.append(item)
    return out


ITEMS = _items()


def test_every_family_gives_items_with_one_true_option():
    assert {item.family for item in ITEMS} == set(FAMILIES)
    for item in ITEMS:
        assert len(item.options) == N_OPTIONS
        assert [s == item.truth for s in item.options].count(True) == 1
        assert item.options[item.answer_idx] == item.truth
        assert item.distractor_kinds[item.answer_idx] == "answer"


def test_distractors_differ_symbolically_and_in_pixels():
    for item in ITEMS[:60]:
        assert len({state_id(s) for s in item.options}) == N_OPTIONS
        canonical = [render_state(s, 0, SPEC, jitter=0, scale_jitter=0) for s in item.options]
        answer = canonical[item.answer_idx].astype(int)
        for k, image in enumerate(canonical):
            if k != item.answer_idx:
                assert np.abs(image.astype(int) - answer).max() > 100


def test_answer_positions_are_uniform():
    counts = np.bincount([item.answer_idx for item in ITEMS], minlength=N_OPTIONS)
    assert stats.chisquare(counts).pvalue > 0.001


def test_vfp_shows_only_the_context_and_others_the_whole_clip():
    for item in ITEMS:
        assert item.n_frames == (CFG["vfp_context"] if item.family == "vfp" else SPEC.frames)


def test_text_templates_round_trip():
    for item in ITEMS[:50]:
        for state in item.options:
            assert text_to_state(state_to_text(state)) == state


def test_the_same_seed_gives_the_same_item():
    scene = simulate(3, SPEC)
    assert build_item(scene, "v", "tfr", SPEC, 11, CFG) == build_item(
        scene, "v", "tfr", SPEC, 11, CFG
    )
