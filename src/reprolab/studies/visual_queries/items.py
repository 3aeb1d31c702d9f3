"""Multiple-choice items built on symbolic states, for the three question families.

An item is (video, question, four options, answer) where every option is a symbolic state
(`synth.State`); the mode decides only how options are shown (`text.state_to_text` or
`synth.render_state`), so text and visual items share `state_id`s and answers.

What each family asks (`family_answer`), and its *pair*, the two sprites whose colours the
swapped options exchange:

- `tfr` (temporal frame retrieval): the whole video; "which scene comes right after the <a>
  hits the <b>?" (sprites named by shape only, so the question gives no colour away). The
  answer is the state one frame after the first collision; the pair is the colliding pair.
- `vfp` (video future prediction): the first `vfp_context` frames; "which scene comes
  `vfp_horizon` frames after the clip ends?" The answer comes from the simulation. The pair
  is the first collision between the clip's end and the asked frame, or, without one, the two
  sprites closest together at the asked frame (a near miss).
- `cmd` (causal memory distortion): the whole video; "which scene did you see just before the
  collision?" The answer is the state one frame before the first collision; the pair is the
  colliding pair.

Options: a 2 x 2 grid (`build_item`). A state is a *layout* (the cell of each sprite) worn
with a *colouring* (the colour of each sprite). The four options are

    answer                        the answer's layout, the answer's colouring
    colours_swapped               the answer's layout, the pair's colours exchanged
    other_cells                   another video's layout, the answer's colouring
    other_cells_colours_swapped   another video's layout, the pair's colours exchanged

The other layout is the same family's answer layout of one other video of the same split with
as many sprites, drawn uniformly; its pair is mapped onto this item's pair (orientation at
random) and its other sprites onto this item's other sprites at random. Sprites are
exchangeable in the generator (shapes and colours are drawn at random and do not change the
physics), so the other layout has the same distribution as the answer's, and the colouring
with the pair exchanged the same distribution as the true one. Given the four options alone
the answer is then exchangeable with the distractors: every option shares its layout with one
option and its colouring with another, and which layout and which colouring are the true ones
is a coin flip without the video. The card's perturbations of the answer left the answer at
the centre of its option set instead (an option-set baseline scored 77 % on TFR and CMD).

With the video the grid asks two things: where the sprites are at the asked time (the layout)
and which colours they wear then (the colouring, which a collision swaps). For TFR and CMD the
swapped option is often a state of the video one or two frames on the wrong side of the
collision.

Each item draws its other video and the slots (a uniform permutation of the four) from its
own seed. An item is skipped (and counted), never redrawn, when the split has no other video
with as many sprites or the drawn layout equals the answer's: redrawing would make the
answer's layout more typical than the other one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.preprocess.video.synth import SHAPES, Scene, SceneSpec, State, state_at

FAMILIES = ("tfr", "vfp", "cmd")
N_OPTIONS = 4
MODES = ("text", "visual")
"""How the options are shown: as sentences or as rendered images."""
KINDS = ("answer", "colours_swapped", "other_cells", "other_cells_colours_swapped")
"""The four cells of an item's option grid (see the module docstring)."""


@dataclass(frozen=True)
class Item:
    """One question about one video, with symbolic options."""

    id: str
    family: str
    video: str
    question: str
    options: tuple[State, ...]
    answer_idx: int
    distractor_kinds: tuple[str, ...]  # per option, one of KINDS
    n_frames: int  # frames of the video the model is shown (from the start)
    truth: State
    sources: tuple[str, ...]  # per option, the video whose layout it wears

    @property
    def state_ids(self) -> tuple[str, ...]:
        """A stable id per option state (the same in both modes)."""
        return tuple(state_id(s) for s in self.options)


@dataclass(frozen=True)
class Answer:
    """What a family asks of one video: the question, the true state, the frames shown and
    the pair (two shapes) whose colours the swapped options exchange."""

    question: str
    truth: State
    n_frames: int
    pair: tuple[int, int]


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


def _shapes(scene: Scene, i: int, j: int) -> tuple[int, int]:
    return int(scene.shapes[i]), int(scene.shapes[j])


def _tfr(scene: Scene, spec: SceneSpec, cfg: Mapping) -> Answer:
    first = scene.collisions[0]
    t, (i, j) = first["frame"], first["objects"]
    a, b = _shapes(scene, i, j)
    return Answer(
        f"which scene comes right after the {SHAPES[a]} hits the {SHAPES[b]} ?",
        state_at(scene, min(t + 1, spec.frames - 1), spec.size),
        spec.frames,
        (a, b),
    )


def _vfp(scene: Scene, spec: SceneSpec, cfg: Mapping) -> Answer:
    context, horizon = int(cfg["vfp_context"]), int(cfg["vfp_horizon"])
    last, target = context - 1, context - 1 + horizon
    ahead = [e for e in scene.collisions if last < e["frame"] <= target]
    if ahead:
        i, j = ahead[0]["objects"]
    else:  # a near miss: the two sprites closest together at the asked frame
        pos = scene.positions[target]
        pairs = [(i, j) for i in range(len(pos)) for j in range(i + 1, len(pos))]
        i, j = min(pairs, key=lambda p: float(np.linalg.norm(pos[p[0]] - pos[p[1]])))
    return Answer(
        f"which scene comes {horizon} frames after the clip ends ?",
        state_at(scene, target, spec.size),
        context,
        _shapes(scene, i, j),
    )


def _cmd(scene: Scene, spec: SceneSpec, cfg: Mapping) -> Answer:
    first = scene.collisions[0]
    t, (i, j) = first["frame"], first["objects"]
    return Answer(
        "which scene did you see just before the collision ?",
        state_at(scene, t - 1, spec.size),
        spec.frames,
        _shapes(scene, i, j),
    )


BUILDERS: dict[str, Callable[[Scene, SceneSpec, Mapping], Answer]] = {
    "tfr": _tfr,
    "vfp": _vfp,
    "cmd": _cmd,
}


def family_answer(scene: Scene, family: str, spec: SceneSpec, cfg: Mapping) -> Answer:
    """What `family` asks of `scene` (see the module docstring); `cfg` holds `vfp_context`
    and `vfp_horizon`."""
    return BUILDERS[family](scene, spec, cfg)


def _layout_onto(source: Answer, target: Answer, rng: np.random.Generator) -> dict[int, int]:
    """The layout of `source` worn by `target`'s sprites: shape → cell.

    `source`'s pair goes onto `target`'s pair (orientation at random), its other sprites onto
    `target`'s other sprites in a random order.
    """
    cells = {shape: cell for shape, _, cell in source.truth}
    src_pair = list(source.pair) if rng.integers(2) == 0 else list(source.pair)[::-1]
    src_rest = [s for s in sorted(cells) if s not in source.pair]
    dst_rest = [s for s, _, _ in target.truth if s not in target.pair]
    dst_rest = [dst_rest[k] for k in rng.permutation(len(dst_rest))]
    mapping = dict(zip(src_pair + src_rest, list(target.pair) + dst_rest, strict=True))
    return {mapping[shape]: cell for shape, cell in cells.items()}


def _wear(colouring: Mapping[int, int], layout: Mapping[int, int]) -> State:
    return tuple(sorted((shape, colouring[shape], layout[shape]) for shape in colouring))


def build_item(
    video: str,
    family: str,
    answer: Answer,
    pool: Sequence[tuple[str, Answer]],
    seed: int,
) -> Item | None:
    """The `family` item of `video`, or None when it is skipped (see the module docstring).

    `pool` holds (video, answer) of the same family for the videos of the split (the item's
    own video among them is ignored). Every random choice comes from `seed`.
    """
    rng = np.random.default_rng(seed)
    others = [(name, a) for name, a in pool if name != video and len(a.truth) == len(answer.truth)]
    if not others:
        return None
    source, other = others[int(rng.integers(len(others)))]
    layout = {shape: cell for shape, _, cell in answer.truth}
    foreign = _layout_onto(other, answer, rng)
    if foreign == layout:
        return None
    colouring = {shape: colour for shape, colour, _ in answer.truth}
    swapped = dict(colouring)
    a, b = answer.pair
    swapped[a], swapped[b] = colouring[b], colouring[a]
    grid = [
        (KINDS[0], video, _wear(colouring, layout)),
        (KINDS[1], video, _wear(swapped, layout)),
        (KINDS[2], source, _wear(colouring, foreign)),
        (KINDS[3], source, _wear(swapped, foreign)),
    ]
    order = [grid[k] for k in rng.permutation(N_OPTIONS)]
    return Item(
        id=f"{video}:{family}",
        family=family,
        video=video,
        question=answer.question,
        options=tuple(state for _, _, state in order),
        answer_idx=[kind for kind, _, _ in order].index(KINDS[0]),
        distractor_kinds=tuple(kind for kind, _, _ in order),
        n_frames=answer.n_frames,
        truth=answer.truth,
        sources=tuple(name for _, name, _ in order),
    )


def build_split(
    scenes: Mapping[str, Scene],
    videos: Sequence[str],
    spec: SceneSpec,
    seed: int,
    cfg: Mapping,
) -> tuple[list[Item], dict[str, int]]:
    """Items of every family for `videos` (one split: other layouts come from these videos
    only), in video then family order, and how many each family skipped. The item of a video
    and family draws from derive_seed(seed, "item", video, family)."""
    return build_grid_split(
        videos, lambda name, family: family_answer(scenes[name], family, spec, cfg), seed
    )


def build_grid_split(
    videos: Sequence[str],
    answer_of: Callable[[str, str], Answer | None],
    seed: int,
) -> tuple[list[Item], dict[str, int]]:
    """The option-grid items of every family for `videos` (see `build_split`), whatever the
    scenes are: `answer_of(video, family)` gives what the family asks of the video, or None
    when the video cannot pose it (a real video whose collision falls outside its clip, say).
    Such a video counts as skipped for that family and lends no layout to the others."""
    videos = sorted(videos)
    answers = {family: {name: answer_of(name, family) for name in videos} for family in FAMILIES}
    pools = {
        family: [(name, a) for name, a in answers[family].items() if a is not None]
        for family in FAMILIES
    }
    items, skipped = [], dict.fromkeys(FAMILIES, 0)
    for name in videos:
        for family in FAMILIES:
            answer = answers[family][name]
            item = (
                None
                if answer is None
                else build_item(
                    name, family, answer, pools[family], derive_seed(seed, "item", name, family)
                )
            )
            if item is None:
                skipped[family] += 1
            else:
                items.append(item)
    return items, skipped
