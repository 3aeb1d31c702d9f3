"""bidrive's scene generator: determinism, array layout, experts that are collision-free, on
the road and score (near) full PDMS, the multimodality of stopped-lead scenes (the mean of the
two overtakes drives into the obstacle) and argument checks."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from reprolab.studies.bidrive import pdms
from reprolab.studies.bidrive.scenes import (
    AGENT_FEATURES,
    CONTEXT_DIM,
    KINDS,
    MODES,
    Scenes,
    generate_scenes,
)

N = 600
MODE = {name: i for i, name in enumerate(MODES)}


@pytest.fixture(scope="module")
def scenes() -> Scenes:
    return generate_scenes(N, 11)


@pytest.fixture(scope="module")
def reference(scenes: Scenes) -> np.ndarray:
    return pdms.scene_reference_progress(scenes)


def test_the_same_seed_gives_identical_arrays_and_another_seed_does_not(scenes):
    again = generate_scenes(N, 11)
    for f in fields(Scenes):
        np.testing.assert_array_equal(getattr(again, f.name), getattr(scenes, f.name), f.name)
    other = generate_scenes(N, 12)
    assert not np.array_equal(other.expert, scenes.expert)


def test_arrays_have_the_documented_layout(scenes):
    assert scenes.ctx.shape == (N, CONTEXT_DIM) and CONTEXT_DIM == 36
    assert scenes.agents.shape == (N, 4, len(AGENT_FEATURES))
    assert scenes.agents_future.shape == (N, 4, 40, 2)
    assert scenes.expert.shape == (N, 8, 2) and scenes.road.shape == (N, 4)
    assert scenes.mode_plans.shape == (N, 3, 8, 2)
    assert scenes.mode.dtype == np.int8 and scenes.kind.dtype == np.int8
    np.testing.assert_array_equal(scenes.ctx[:, 0], scenes.ego_speed)
    np.testing.assert_array_equal(scenes.ctx[:, 1:4], np.eye(3)[scenes.command])
    np.testing.assert_array_equal(scenes.ctx[:, 4:8], scenes.road)
    np.testing.assert_array_equal(scenes.ctx[:, 8:], scenes.agents.reshape(N, -1))
    # the road: 2-3 lanes of 3.5 m, the ego at a lane centre
    assert set(np.unique(scenes.road[:, 2])) == {2.0, 3.0}
    np.testing.assert_allclose(scenes.road[:, 0], 1.75 * scenes.road[:, 2])
    lane = (scenes.road[:, 3] + scenes.road[:, 0]) / 3.5 - 0.5
    np.testing.assert_allclose(lane, np.round(lane), atol=1e-9)
    assert np.abs(scenes.road[:, 1]).max() <= 0.003 and (scenes.road[:, 1] == 0).mean() > 0.3
    # empty agent slots are zero and come last; filled ones are sorted by distance
    mask = scenes.agents[..., 6] > 0.5
    assert not (np.diff(mask.astype(int), axis=1) > 0).any()
    assert (scenes.agents[~mask] == 0).all() and (scenes.agents_future[~mask] == 0).all()
    distance = np.hypot(scenes.agents[..., 0], scenes.agents[..., 1])
    assert (np.diff(distance, axis=1)[mask[:, 1:]] >= 0).all()
    # futures continue the t = 0 state at its velocity
    step = scenes.agents_future[:, :, 0] - scenes.agents[..., :2]
    np.testing.assert_allclose(step[mask], 0.1 * scenes.agents[..., 2:4][mask], atol=0.05)


def test_the_scenario_mix_and_the_modes_follow_the_card(scenes):
    share = np.bincount(scenes.kind, minlength=3) / N
    np.testing.assert_allclose(share, [0.3, 0.4, 0.3], atol=0.06)
    kind_of = {
        "free": {"cruise", "speed_up", "slow_down", "change_left", "change_right"},
        "lead": {"overtake_left", "overtake_right", "follow"},
        "cut_in": {"yield", "evade_left", "evade_right"},
    }
    for k, name in enumerate(KINDS):
        assert {MODES[m] for m in scenes.mode[scenes.kind == k]} <= kind_of[name]
    # a left / right command on a free road is a lane change; other scenes go straight
    free = scenes.kind == 0
    np.testing.assert_array_equal(scenes.mode[free & (scenes.command == 0)], MODE["change_left"])
    np.testing.assert_array_equal(scenes.mode[free & (scenes.command == 2)], MODE["change_right"])
    assert (scenes.command[~free] == 1).all()
    # the expert is its chosen mode's plan, and that mode passed the checks
    slot = np.argmax(scenes.mode_ids == scenes.mode[:, None], axis=1)
    rows = np.arange(N)
    assert scenes.mode_valid[rows, slot].all()
    np.testing.assert_array_equal(scenes.mode_plans[rows, slot], scenes.expert)
    # both overtakes are common among the obstacle scenes
    lead = scenes.mode[scenes.kind == 1]
    assert (lead == MODE["overtake_left"]).mean() > 0.25
    assert (lead == MODE["overtake_right"]).mean() > 0.25


def test_experts_are_collision_free_on_the_road_and_score_near_full(scenes, reference):
    result = pdms.score_scenes(scenes.expert, scenes, reference)
    for name in ("NC", "DAC", "TTC", "C"):
        np.testing.assert_array_equal(result.columns()[name], 1.0, name)
    assert result.score.mean() > 0.9 and result.score.min() > 0.7
    roll = pdms.densify(scenes.expert, scenes.ego_speed)
    tracks = pdms.agent_tracks(scenes.agents, scenes.agents_future, scenes.road)
    assert not pdms.any_overlap(roll, tracks).any()
    # lane changes and overtakes end a lane over, on the chosen side
    _, e = pdms.road_frame(scenes.expert[:, -1], scenes.road)
    shift = e - scenes.road[:, 3]
    left = np.isin(scenes.mode, [MODE["overtake_left"], MODE["change_left"], MODE["evade_left"]])
    right = np.isin(
        scenes.mode, [MODE["overtake_right"], MODE["change_right"], MODE["evade_right"]]
    )
    assert (shift[left] > 2.5).all() and (shift[right] < -2.5).all()
    assert (np.abs(shift[~left & ~right]) < 0.5).all()


def test_averaging_the_two_overtakes_of_a_stopped_lead_drives_into_it(scenes):
    ids, valid = scenes.mode_ids, scenes.mode_valid
    both = (ids[:, 0] == MODE["overtake_left"]) & (ids[:, 1] == MODE["overtake_right"])
    both &= valid[:, 0] & valid[:, 1]
    speed = np.hypot(scenes.agents[..., 2], scenes.agents[..., 3])
    stopped = ((speed == 0.0) & (scenes.agents[..., 6] > 0.5)).any(axis=1)
    chosen = both & stopped
    assert chosen.sum() >= 20
    sub = scenes.subset(chosen)
    arrays = (sub.ego_speed, sub.road, sub.agents, sub.agents_future)
    for c in (0, 1):
        assert not pdms.collisions(sub.mode_plans[:, c], *arrays).any()
    mean = sub.mode_plans[:, :2].mean(axis=1)
    assert pdms.collisions(mean, *arrays).mean() > 0.9


def test_bad_arguments_are_named():
    cases = [
        ({"n": 0}, "n"),
        ({"n": 2.5}, "n"),
        ({"seed": -1}, "seed"),
        ({"mix": (0.5, 0.5, 0.5)}, "mix"),
        ({"mix": (1.0, 0.0)}, "mix"),
        ({"lanes": (4,)}, "lanes"),
        ({"lanes": ()}, "lanes"),
        ({"max_curvature": -0.1}, "max_curvature"),
        ({"curved_fraction": 1.5}, "curved_fraction"),
        ({"speed_range": (20.0, 10.0)}, "speed_range"),
        ({"other_agent_rate": -0.1}, "other_agent_rate"),
        ({"lead_middle_lane": 2.0}, "lead_middle_lane"),
        ({"max_rounds": 0}, "max_rounds"),
    ]
    for change, name in cases:
        kwargs = {"n": 3, "seed": 0, **change}
        with pytest.raises(ValueError, match=f"^{name}:"):
            generate_scenes(**kwargs)
