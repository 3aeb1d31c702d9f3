"""Items: one true option on a 2 x 2 option grid, uniform answer slots, both modes agree."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from reprolab.preprocess.video.synth import COLOUR_NAMES, SceneSpec, render_state, simulate
from reprolab.studies.visual_queries.items import (
    FAMILIES,
    KINDS,
    N_OPTIONS,
    build_item,
    build_split,
    family_answer,
    state_id,
)
from reprolab.studies.visual_queries.text import state_to_text, text_to_state

SPEC = SceneSpec(radius=4.5)
CFG = {"vfp_context": 8, "vfp_horizon": 6}
SCENES = {f"v{seed:03d}": simulate(seed, SPEC) for seed in range(150)}
ITEMS, SKIPPED = build_split(SCENES, sorted(SCENES), SPEC, 0, CFG)


def _layout(state):
    return {shape: cell for shape, _, cell in state}


def _colouring(state):
    return {shape: colour for shape, colour, _ in state}


def test_every_family_gives_items_with_one_true_option():
    assert {item.family for item in ITEMS} == set(FAMILIES)
    assert len(ITEMS) + sum(SKIPPED.values()) == len(FAMILIES) * len(SCENES)
    assert sum(SKIPPED.values()) < 0.05 * len(ITEMS)
    for item in ITEMS:
        assert len(item.options) == N_OPTIONS
        assert [s == item.truth for s in item.options].count(True) == 1
        assert item.options[item.answer_idx] == item.truth
        assert item.distractor_kinds[item.answer_idx] == "answer"
        assert sorted(item.distractor_kinds) == sorted(KINDS)


def test_options_are_a_grid_of_two_layouts_and_two_colourings():
    for item in ITEMS:
        by_kind = dict(zip(item.distractor_kinds, item.options, strict=True))
        source = dict(zip(item.distractor_kinds, item.sources, strict=True))
        answer = by_kind["answer"]
        assert _layout(by_kind["colours_swapped"]) == _layout(answer)
        assert _layout(by_kind["other_cells"]) == _layout(by_kind["other_cells_colours_swapped"])
        assert _layout(by_kind["other_cells"]) != _layout(answer)
        assert _colouring(by_kind["other_cells"]) == _colouring(answer)
        swapped = _colouring(by_kind["colours_swapped"])
        assert swapped == _colouring(by_kind["other_cells_colours_swapped"])
        changed = [s for s, c in _colouring(answer).items() if swapped[s] != c]
        pair = family_answer(SCENES[item.video], item.family, SPEC, CFG).pair
        assert sorted(changed) == sorted(pair)
        # the other layout is another video's answer layout, with as many sprites
        assert source["answer"] == source["colours_swapped"] == item.video
        other = source["other_cells"]
        assert other != item.video and other == source["other_cells_colours_swapped"]
        other_cells = _layout(family_answer(SCENES[other], item.family, SPEC, CFG).truth)
        assert sorted(other_cells.values()) == sorted(_layout(by_kind["other_cells"]).values())


def test_the_other_layout_keeps_the_pair_together():
    """The other video's pair is mapped onto the item's pair, so a colliding pair that touches
    in the answer also touches in the other layout (TFR, CMD)."""
    for item in ITEMS:
        pair = family_answer(SCENES[item.video], item.family, SPEC, CFG).pair
        other = item.sources[item.distractor_kinds.index("other_cells")]
        other_answer = family_answer(SCENES[other], item.family, SPEC, CFG)
        mine = _layout(item.options[item.distractor_kinds.index("other_cells")])
        theirs = _layout(other_answer.truth)
        assert sorted(mine[s] for s in pair) == sorted(theirs[s] for s in other_answer.pair)


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


def test_questions_name_no_colour():
    """A colour in the question would tell which colouring is the answer's."""
    for item in ITEMS:
        assert not set(item.question.split()) & set(COLOUR_NAMES)


def test_text_templates_round_trip():
    for item in ITEMS[:50]:
        for state in item.options:
            assert text_to_state(state_to_text(state)) == state


def test_the_same_seed_gives_the_same_items_and_another_seed_others():
    names = sorted(SCENES)[:40]
    first = build_split(SCENES, names, SPEC, 7, CFG)
    assert first == build_split(SCENES, names, SPEC, 7, CFG)
    assert first[0] != build_split(SCENES, names, SPEC, 8, CFG)[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_an_item_without_another_video_of_its_size_is_skipped(family):
    name = sorted(SCENES)[0]
    answer = family_answer(SCENES[name], family, SPEC, CFG)
    assert build_item(name, family, answer, [(name, answer)], 0) is None
    other = next(
        (n, a)
        for n in sorted(SCENES)[1:]
        if len((a := family_answer(SCENES[n], family, SPEC, CFG)).truth) != len(answer.truth)
    )
    assert build_item(name, family, answer, [(name, answer), other], 0) is None


def test_a_video_that_cannot_pose_a_family_is_skipped_and_lends_no_layout():
    from reprolab.studies.visual_queries.items import Answer, build_grid_split

    def answer_of(name: str, family: str) -> Answer | None:
        if family != "tfr" or name == "v3":
            return None
        cells = {"v0": (0, 1), "v1": (2, 3), "v2": (4, 5), "v3": (6, 7)}[name]
        return Answer("q", ((0, 0, cells[0]), (1, 1, cells[1])), 16, (0, 1))

    items, skipped = build_grid_split(["v3", "v1", "v0", "v2"], answer_of, 0)
    assert skipped == {"tfr": 1, "vfp": 4, "cmd": 4}
    assert [item.video for item in items] == ["v0", "v1", "v2"]
    assert all("v3" not in item.sources for item in items)
