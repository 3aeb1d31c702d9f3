"""Multiple-choice items built on symbolic states, for the three question families.

An item is (video, question, four options, answer) where every option is a symbolic state
(`synth.State`); the mode decides only how options are shown (`text.state_to_text` or
`synth.render_state`), so text and visual items share `state_id`s and answers.

- `tfr` (temporal frame retrieval): "which scene comes right after <a> hits <b>?" The answer
  is the state one frame after the first collision. Distractors: the scene two frames before
  it and five frames after it (wrong times), the answer with two sprites' cells swapped, and
  the answer with the colliding pair's colours swapped back (no causal effect).
- `vfp` (video future prediction): the model sees the first `vfp_context` frames; "which
  scene comes `vfp_horizon` frames after the clip ends?" The answer comes from the simulation.
  Distractors re-simulate the future with every velocity reversed, without wall bounces or
  without collisions, freeze one sprite where it was last seen, or freeze the whole scene.
- `cmd` (causal memory distortion): the whole video; "which scene did you see just before
  the collision?" The answer is the state one frame before the first collision. Distractors
  are distorted memories: the colliding pair's colours swapped, one sprite displaced to
  another cell, the event deleted (re-simulated from three frames before without
  collisions, two frames past it) and the scene two frames after the collision.

Each item draws three distractors from its family's candidates, keeping only those that
differ from the answer and from each other in at least one (shape, colour, cell) attribute;
the answer's position is uniform over the four slots. An item whose family cannot give three
distinct distractors is skipped (and counted), never padded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from reprolab.preprocess.video.synth import (
    COLOUR_NAMES,
    GRID,
    SHAPES,
    Scene,
    SceneSpec,
    State,
    make_state,
    state_at,
    step,
)

FAMILIES = ("tfr", "vfp", "cmd")
N_OPTIONS = 4
MODES = ("text", "visual")
"""How the options are shown: as sentences or as rendered images."""


@dataclass(frozen=True)
class Item:
    """One question about one video, with symbolic options."""

    id: str
    family: str
    video: str
    question: str
    options: tuple[State, ...]
    answer_idx: int
    distractor_kinds: tuple[str, ...]
    n_frames: int  # frames of the video the model is shown (from the start)
    truth: State

    @property
    def state_ids(self) -> tuple[str, ...]:
        """A stable id per option state (the same in both modes)."""
        return tuple(state_id(s) for s in self.options)


def state_id(state: State) -> str:
    """A short stable hash of a symbolic state."""
    return hashlib.sha256(repr(state).encode()).hexdigest()[:12]


def mismatches(a: State, b: State) -> int:
    """Attribute mismatches between two states (a missing sprite counts three)."""
    sa, sb = {s: (c, g) for s, c, g in a}, {s: (c, g) for s, c, g in b}
    count = 0
    for shape in set(sa) | set(sb):
        if shape not in sa or shape not in sb:
            count += 3
        else:
            count += int(sa[shape][0] != sb[shape][0]) + int(sa[shape][1] != sb[shape][1])
    return count


def _name(scene: Scene, k: int, frame: int) -> str:
    """How a question names sprite k as it looks at `frame` (colour and shape)."""
    return f"{COLOUR_NAMES[int(scene.colours[frame, k])]} {SHAPES[scene.shapes[k]]}"


def _simulate_from(
    scene: Scene, start: int, steps: int, spec: SceneSpec, **kwargs: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Positions and colours `steps` frames after `start`, re-simulated with `step` options."""
    pos = scene.positions[start]
    vel = scene.velocities[start] * (-1.0 if kwargs.pop("reverse", False) else 1.0)
    col = scene.colours[start]
    for _ in range(steps):
        pos, vel, col, _events = step(pos, vel, col, spec, **kwargs)
    return np.clip(pos, 0, spec.size - 1e-6), col


def _with_cells(state: State, a: int, b: int) -> State:
    """`state` with the cells of its sprites a and b (positions in the tuple) exchanged."""
    items = list(state)
    (sa, ca, cell_a), (sb, cb, cell_b) = items[a], items[b]
    items[a], items[b] = (sa, ca, cell_b), (sb, cb, cell_a)
    return tuple(sorted(items))


def _colours_swapped(scene: Scene, frame: int, i: int, j: int, spec: SceneSpec) -> State:
    """The state at `frame` with sprites i and j wearing each other's colours."""
    colours = scene.colours[frame].copy()
    colours[[i, j]] = colours[[j, i]]
    return make_state(scene.shapes, colours, scene.positions[frame], spec.size)


def _displaced(state: State, rng: np.random.Generator) -> State:
    """`state` with one sprite moved to a random different cell."""
    items = list(state)
    k = int(rng.integers(len(items)))
    shape, colour, cell = items[k]
    others = [c for c in range(GRID * GRID) if c != cell]
    items[k] = (shape, colour, int(rng.choice(others)))
    return tuple(sorted(items))


def _tfr(scene: Scene, spec: SceneSpec, rng: np.random.Generator, cfg: dict) -> tuple:
    first = scene.collisions[0]
    t, (i, j) = first["frame"], first["objects"]
    answer_frame = min(t + 1, spec.frames - 1)
    truth = state_at(scene, answer_frame, spec.size)
    pair = rng.permutation(len(scene.shapes))[:2]
    candidates = {
        "earlier": state_at(scene, max(t - 2, 0), spec.size),
        "later": state_at(scene, min(t + 5, spec.frames - 1), spec.size),
        "cells_swapped": _with_cells(truth, int(pair[0]), int(pair[1])),
        "no_effect": _colours_swapped(scene, answer_frame, i, j, spec),
    }
    question = (
        f"which scene comes right after the {_name(scene, i, t - 1)} hits "
        f"the {_name(scene, j, t - 1)} ?"
    )
    return question, truth, candidates, spec.frames


def _vfp(scene: Scene, spec: SceneSpec, rng: np.random.Generator, cfg: dict) -> tuple:
    context, horizon = int(cfg["vfp_context"]), int(cfg["vfp_horizon"])
    last = context - 1
    truth = state_at(scene, last + horizon, spec.size)

    def future(**kwargs: bool) -> State:
        pos, col = _simulate_from(scene, last, horizon, spec, **kwargs)
        return make_state(scene.shapes, col, pos, spec.size)

    target = last + horizon
    candidates = {
        "reversed": future(reverse=True),
        "no_bounce": future(walls=False),
        "no_collision": future(collide=False),
        "static": state_at(scene, last, spec.size),
    }
    for k in range(len(scene.shapes)):
        pos = scene.positions[target].copy()
        pos[k] = scene.positions[last, k]
        candidates[f"frozen_{SHAPES[scene.shapes[k]]}"] = make_state(
            scene.shapes, scene.colours[target], pos, spec.size
        )
    question = f"which scene comes {horizon} frames after the clip ends ?"
    return question, truth, candidates, context


def _cmd(scene: Scene, spec: SceneSpec, rng: np.random.Generator, cfg: dict) -> tuple:
    first = scene.collisions[0]
    t, (i, j) = first["frame"], first["objects"]
    truth = state_at(scene, t - 1, spec.size)
    start = max(t - 3, 0)
    pos, col = _simulate_from(scene, start, t + 2 - start, spec, collide=False)
    candidates = {
        "colours_swapped": _colours_swapped(scene, t - 1, i, j, spec),
        "displaced": _displaced(truth, rng),
        "event_deleted": make_state(scene.shapes, col, pos, spec.size),
        "after": state_at(scene, min(t + 2, spec.frames - 1), spec.size),
    }
    return "which scene did you see just before the collision ?", truth, candidates, spec.frames


BUILDERS: dict[str, Callable[..., tuple]] = {"tfr": _tfr, "vfp": _vfp, "cmd": _cmd}


def build_item(
    scene: Scene, video: str, family: str, spec: SceneSpec, seed: int, cfg: dict
) -> Item | None:
    """The `family` item of a scene, or None when three distinct distractors do not exist.

    `cfg` holds `vfp_context` and `vfp_horizon`. Every random choice comes from `seed`.
    """
    rng = np.random.default_rng(seed)
    question, truth, candidates, n_frames = BUILDERS[family](scene, spec, rng, cfg)
    chosen: list[tuple[str, State]] = []
    for kind in rng.permutation(sorted(candidates)):
        state = candidates[str(kind)]
        if state != truth and all(state != other for _, other in chosen):
            chosen.append((str(kind), state))
        if len(chosen) == N_OPTIONS - 1:
            break
    if len(chosen) < N_OPTIONS - 1:
        return None
    answer_idx = int(rng.integers(N_OPTIONS))
    options = [state for _, state in chosen]
    kinds = [kind for kind, _ in chosen]
    options.insert(answer_idx, truth)
    kinds.insert(answer_idx, "answer")
    return Item(
        id=f"{video}:{family}",
        family=family,
        video=video,
        question=question,
        options=tuple(options),
        answer_idx=answer_idx,
        distractor_kinds=tuple(kinds),
        n_frames=n_frames,
        truth=truth,
    )
