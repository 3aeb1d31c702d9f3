"""SynthMotion: clips whose class is how two sprites move (or, as a control, how they look).

Why: a study of temporal adapters in a frozen image model needs classes that no single frame,
and no average over frames, can tell apart, and a control where one frame is enough.

Task `motion` has six classes. In `left`, `right`, `up` and `down` both sprites move together
at `speed` px per frame in that direction; in `approach` and `separate` they sit on a random
axis through a random centre and move towards or away from each other at `speed / 2` each.
The pairs (left, right), (up, down) and (approach, separate) are time reversals of each other:
a clip of one class played backwards is a clip of the other with the same sprites and
background, and the start positions are drawn so that the reversed clip is exactly as likely.
So the set of frames carries no information about which class of a pair a clip is, only their
order does, and a model blind to order is capped at 50 % accuracy (the pair, then a coin flip).

Task `appearance` (the coarse control) has six classes, 3 shapes x 2 colours
(`APPEARANCE_SHAPES`, `APPEARANCE_COLOURS`): both sprites take the class's shape and colour and
move by one of the six motions drawn at random, so one frame suffices.

A clip: two sprites, each with a shape from `SHAPES` and a colour from `PALETTE` scaled by a
factor in `COLOUR_SCALE` (in task `motion` drawn independently of the class), painted as
supersampled masks over a static per-clip background of amplitude `texture`: a coarse colour
grid, pixel noise and a sinusoidal stripe pattern (`TEXTURE_WEIGHTS`), so the sprites do not
move over a flat field. Everything is drawn from one generator seeded by the clip's seed, the
label first. A sprite stays wholly inside the frame on every frame (its centre within
[radius, size - radius]); `MotionSpec` refuses sizes where the paths cannot fit.

Start positions, velocities and positions are rounded to `POSITION_DECIMALS`, so the JSON
annotation holds exactly the positions that were drawn (the rounding may move a sprite by
under 1e-3 px, past the frame's edge included). `write_motion_dataset` writes the mp4
files, the annotations and a manifest with a train/test split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from reprolab.core.determinism import derive_seed
from reprolab.core.io import write_csv, write_json
from reprolab.core.params import dataclass_values
from reprolab.core.progress import progress

TASKS = ("motion", "appearance")
MOTIONS = ("left", "right", "up", "down", "approach", "separate")
TRANSLATIONS = {"left": (-1.0, 0.0), "right": (1.0, 0.0), "up": (0.0, -1.0), "down": (0.0, 1.0)}
"""Unit direction (x, y) of each translation; y grows downwards, as in the image."""
ORDER_PAIRS = (("left", "right"), ("up", "down"), ("approach", "separate"))
"""Classes that are each other's time reversal."""
SHAPES = ("square", "disc", "diamond", "plus", "ring")
PALETTE = {
    "red": (0.9, 0.15, 0.15),
    "green": (0.2, 0.8, 0.25),
    "blue": (0.2, 0.35, 0.95),
    "yellow": (0.95, 0.85, 0.2),
    "magenta": (0.85, 0.2, 0.8),
}
COLOUR_NAMES = tuple(PALETTE)
APPEARANCE_SHAPES = ("square", "disc", "plus")
APPEARANCE_COLOURS = ("red", "blue")
CLASS_NAMES = {
    "motion": MOTIONS,
    "appearance": tuple(f"{c}_{s}" for s in APPEARANCE_SHAPES for c in APPEARANCE_COLOURS),
}
"""Class names per task, in label order; appearance class k is shape k // 2 and colour k % 2."""

COLOUR_SCALE = (0.8, 1.0)  # each sprite's colour is scaled by a factor drawn in this range
CENTRE_BAND = (0.35, 0.65)  # approach/separate centres lie in this band of the frame (fraction)
CONTACT_GAP = 1.0  # px between the outlines of two translating sprites, at least
GRID_CELLS = 4  # the background's coarse colour grid is GRID_CELLS x GRID_CELLS
STRIPE_PERIOD = (4.0, 8.0)  # px, range of the stripe pattern's period
TEXTURE_WEIGHTS = (0.4, 0.3, 0.3)  # grid, pixel noise, stripes
SUPERSAMPLE = 4  # sub-pixels per pixel side when painting a sprite mask
POSITION_DECIMALS = 4
MAX_DRAWS = 1000


@dataclass(frozen=True)
class MotionSpec:
    """How SynthMotion clips are drawn (every field a params key, see the module docstring).

    `radius` is a sprite's half-size in px, `speed` px per video frame, `texture` the
    background's amplitude in [0, 1], `test_videos` how many of a dataset's videos (the last
    ones) form the test split.
    """

    task: str = "motion"
    size: int = 32
    frames: int = 12
    radius: float = 3.5
    speed: float = 1.25
    texture: float = 0.3
    test_videos: int = 200

    def __post_init__(self) -> None:
        """Check every value, naming its key; the float fields are stored as floats."""
        if self.task not in TASKS:
            _bad("task", f"must be one of {', '.join(TASKS)}, got {self.task!r}")
        _integer("size", self.size, 1)
        _integer("frames", self.frames, 2)
        _integer("test_videos", self.test_videos, 1)
        for key in ("radius", "speed"):
            value = getattr(self, key)
            if not _finite(value) or value <= 0:
                _bad(key, f"must be a positive number, got {value!r}")
            object.__setattr__(self, key, float(value))
        if not _finite(self.texture) or not 0 <= self.texture <= 1:
            _bad("texture", f"must be a number in [0, 1], got {self.texture!r}")
        object.__setattr__(self, "texture", float(self.texture))
        needed = 4 * self.radius + self.span
        if needed > self.size:
            raise ValueError(
                f"MotionSpec: keys 'radius', 'speed' and 'frames' do not fit key 'size': "
                f"4 * radius + speed * (frames - 1) = {needed:g} must be at most size = "
                f"{self.size}, so that every motion stays inside the frame"
            )

    @property
    def span(self) -> float:
        """How far a translating sprite travels over the clip, in px."""
        return self.speed * (self.frames - 1)

    @property
    def class_names(self) -> tuple[str, ...]:
        """The task's class names, in label order."""
        return CLASS_NAMES[self.task]

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> MotionSpec:
        """Build from a params section: every key required (KeyError), no other key allowed
        (ValueError), then the checks of `__post_init__`."""
        return cls(**dataclass_values(cls, params, "MotionSpec"))


def _bad(key: str, problem: str) -> NoReturn:
    raise ValueError(f"MotionSpec: key '{key}' {problem}")


def _finite(value: Any) -> bool:
    """A real number that is not a bool (YAML's `yes`), inf or nan."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _integer(key: str, value: Any, minimum: int) -> None:
    """Refuse a non-integer (a bool or a float such as 32.0 included) or one below `minimum`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        _bad(key, f"must be an integer of at least {minimum}, got {value!r}")


@dataclass(frozen=True)
class MotionClip:
    """One drawn clip: its class, the sprites' looks, their paths and the background's seed."""

    label: int
    motion: str  # one of MOTIONS (in task `appearance` drawn at random)
    shapes: tuple[int, int]  # indices into SHAPES
    colours: tuple[int, int]  # indices into COLOUR_NAMES
    colour_scales: tuple[float, float]
    positions: np.ndarray  # [frames, 2, 2] float (x, y) in px
    velocities: np.ndarray  # [2, 2] px per frame, constant over the clip
    background_seed: int


def _translation(
    rng: np.random.Generator, motion: str, spec: MotionSpec
) -> tuple[np.ndarray, np.ndarray]:
    """Starts and velocities of a translation: both sprites move by `speed` px per frame.

    Each start is uniform over the positions whose whole path stays inside the frame, so
    the start range of one direction is that of the opposite one shifted by the path: the
    reversed clip is exactly as likely. Starts closer than two radii plus CONTACT_GAP are
    redrawn, so neither sprite hides the other.
    """
    direction = np.asarray(TRANSLATIONS[motion])
    low = spec.radius - np.minimum(direction, 0) * spec.span
    high = spec.size - spec.radius - np.maximum(direction, 0) * spec.span
    velocity = direction * spec.speed
    for _ in range(MAX_DRAWS):
        starts = rng.uniform(low, high, size=(2, 2))
        if np.linalg.norm(starts[0] - starts[1]) >= 2 * spec.radius + CONTACT_GAP:
            return starts, np.stack([velocity, velocity])
    raise RuntimeError(f"cannot place two separated sprites for '{motion}': check the spec")


def _radial(
    rng: np.random.Generator, motion: str, spec: MotionSpec
) -> tuple[np.ndarray, np.ndarray]:
    """Starts and velocities of approach/separate: the sprites sit on a random axis through a
    random centre, each moving by `speed / 2` px per frame along it.

    Each sprite's distance from the centre runs between `radius` (touching) and
    `radius + span / 2`: approach starts at the far end, separate at the near one, so each is
    the other reversed. The centre is uniform over CENTRE_BAND of the frame, cut to where both
    sprites stay inside it along the drawn axis.
    """
    angle = rng.uniform(0, np.pi)
    axis = np.array([np.cos(angle), np.sin(angle)])
    far = spec.radius + spec.span / 2
    extent = np.abs(axis) * far + spec.radius
    low = np.maximum(CENTRE_BAND[0] * spec.size, extent)
    high = np.minimum(CENTRE_BAND[1] * spec.size, spec.size - extent)
    centre = rng.uniform(low, high)
    sides = np.array([[-1.0], [1.0]])  # sprite 0 on the negative side of the axis
    if motion == "approach":
        starts, outward = centre + sides * far * axis, -1.0
    else:
        starts, outward = centre + sides * spec.radius * axis, 1.0
    return starts, sides * outward * (spec.speed / 2) * axis


def draw_clip(seed: int, spec: MotionSpec) -> MotionClip:
    """Draw one clip from `seed`: the label (uniform over the six classes) first, then the
    sprites' looks, their motion and the background's seed, all from one generator."""
    rng = np.random.default_rng(seed)
    label = int(rng.integers(len(spec.class_names)))
    if spec.task == "motion":
        motion = MOTIONS[label]
        shapes = tuple(int(s) for s in rng.integers(len(SHAPES), size=2))
        colours = tuple(int(c) for c in rng.integers(len(COLOUR_NAMES), size=2))
    else:
        motion = MOTIONS[int(rng.integers(len(MOTIONS)))]
        shape = SHAPES.index(APPEARANCE_SHAPES[label // len(APPEARANCE_COLOURS)])
        colour = COLOUR_NAMES.index(APPEARANCE_COLOURS[label % len(APPEARANCE_COLOURS)])
        shapes, colours = (shape, shape), (colour, colour)
    scales = rng.uniform(*COLOUR_SCALE, size=2).round(POSITION_DECIMALS)
    place = _translation if motion in TRANSLATIONS else _radial
    starts, velocities = place(rng, motion, spec)
    starts, velocities = starts.round(POSITION_DECIMALS), velocities.round(POSITION_DECIMALS)
    steps = np.arange(spec.frames, dtype=float)[:, None, None]
    return MotionClip(
        label=label,
        motion=motion,
        shapes=shapes,
        colours=colours,
        colour_scales=(float(scales[0]), float(scales[1])),
        positions=(starts[None] + steps * velocities[None]).round(POSITION_DECIMALS),
        velocities=velocities,
        background_seed=int(rng.integers(2**31)),
    )


def _bilinear_matrix(size_in: int, size_out: int) -> np.ndarray:
    """[size_out, size_in] weights of 1-D bilinear upsampling with pixel centres aligned (as
    torch's `align_corners=False`), the edges clamped."""
    centres = np.clip((np.arange(size_out) + 0.5) * size_in / size_out - 0.5, 0, size_in - 1)
    lower = np.floor(centres).astype(int)
    upper = np.minimum(lower + 1, size_in - 1)
    weight = centres - lower
    matrix = np.zeros((size_out, size_in))
    rows = np.arange(size_out)
    matrix[rows, lower] += 1 - weight
    matrix[rows, upper] += weight
    return matrix


def _background(seed: int, spec: MotionSpec) -> np.ndarray:
    """The clip's static background, float RGB in [0, texture]: TEXTURE_WEIGHTS of a random
    GRID_CELLS^2 colour grid upsampled bilinearly, uniform pixel noise and grey sinusoidal
    stripes of random orientation, period (STRIPE_PERIOD) and phase, each in [0, 1]."""
    rng = np.random.default_rng(seed)
    size = spec.size
    weights = _bilinear_matrix(GRID_CELLS, size)
    grid = np.einsum(
        "ia,jb,abc->ijc", weights, weights, rng.uniform(0, 1, (GRID_CELLS, GRID_CELLS, 3))
    )
    noise = rng.uniform(0, 1, (size, size, 3))
    angle, period, phase = (
        rng.uniform(0, np.pi),
        rng.uniform(*STRIPE_PERIOD),
        rng.uniform(0, 2 * np.pi),
    )
    x, y = np.meshgrid(np.arange(size) + 0.5, np.arange(size) + 0.5)
    stripes = 0.5 + 0.5 * np.sin(
        2 * np.pi * (x * np.cos(angle) + y * np.sin(angle)) / period + phase
    )
    grid_w, noise_w, stripe_w = TEXTURE_WEIGHTS
    return spec.texture * (grid_w * grid + noise_w * noise + stripe_w * stripes[..., None])


def shape_mask(shape: int, cx: float, cy: float, radius: float, size: int) -> np.ndarray:
    """A soft mask (coverage in [0, 1], SUPERSAMPLE^2 samples a pixel) of one sprite whose
    bounding box is [c - radius, c + radius]; the square is shrunk to about the disc's area."""
    coords = (np.arange(size * SUPERSAMPLE) + 0.5) / SUPERSAMPLE
    x, y = np.meshgrid(coords, coords)
    dx, dy = np.abs(x - cx), np.abs(y - cy)
    name = SHAPES[shape]
    if name == "square":
        mask = np.maximum(dx, dy) <= radius * 0.85
    elif name == "disc":
        mask = dx**2 + dy**2 <= radius**2
    elif name == "diamond":
        mask = dx + dy <= radius
    elif name == "plus":
        arm = radius * 0.38
        mask = ((dx <= arm) & (dy <= radius)) | ((dy <= arm) & (dx <= radius))
    else:  # ring
        mask = (dx**2 + dy**2 <= radius**2) & (dx**2 + dy**2 >= (radius * 0.5) ** 2)
    return mask.reshape(size, SUPERSAMPLE, size, SUPERSAMPLE).mean(axis=(1, 3))


def render_video(clip: MotionClip, spec: MotionSpec) -> np.ndarray:
    """All frames of `clip`, uint8 [frames, size, size, 3]: the sprites alpha-blended over the
    background in their order (sprite 1 over sprite 0 where they touch), then rounded."""
    background = _background(clip.background_seed, spec)
    colours = [
        np.asarray(PALETTE[COLOUR_NAMES[c]]) * s
        for c, s in zip(clip.colours, clip.colour_scales, strict=True)
    ]
    video = np.empty((spec.frames, spec.size, spec.size, 3), dtype=np.uint8)
    for t in range(spec.frames):
        image = background.copy()
        for k, shape in enumerate(clip.shapes):
            cx, cy = clip.positions[t, k]
            alpha = shape_mask(shape, cx, cy, spec.radius, spec.size)[..., None]
            image = image * (1 - alpha) + alpha * colours[k]
        video[t] = np.round(image * 255)
    return video


def annotation(clip: MotionClip, spec: MotionSpec) -> dict[str, Any]:
    """The ground truth of a clip as JSON-able data (what `write_motion_dataset` stores)."""
    return {
        "task": spec.task,
        "label": clip.label,
        "label_name": spec.class_names[clip.label],
        "motion": clip.motion,
        "size": spec.size,
        "frames": spec.frames,
        "radius": spec.radius,
        "speed": spec.speed,
        "texture": spec.texture,
        "shapes": [SHAPES[s] for s in clip.shapes],
        "colours": [COLOUR_NAMES[c] for c in clip.colours],
        "colour_scales": list(clip.colour_scales),
        "positions": clip.positions.tolist(),
        "velocity": clip.velocities.tolist(),
        "background_seed": clip.background_seed,
    }


def render_clip(seed: int, spec: MotionSpec) -> tuple[np.ndarray, dict[str, Any]]:
    """The clip drawn from `seed`: uint8 [frames, size, size, 3] and its annotation."""
    clip = draw_clip(seed, spec)
    return render_video(clip, spec), annotation(clip, spec)


def clip_name(index: int) -> str:
    """The file stem of clip number `index` in a SynthMotion dataset."""
    return f"clip_{index:05d}"


def write_motion_dataset(
    out_dir: str | Path,
    n_videos: int,
    seed: int,
    spec: MotionSpec,
    encoding: dict[str, Any],
    show_progress: bool = True,
) -> pd.DataFrame:
    """Draw `n_videos` clips and write videos/<name>.mp4, annotations/<name>.json and
    manifest.csv (video, split, label, label_name) under `out_dir`; clip i is drawn from
    derive_seed(seed, "motion", i). Returns the manifest.

    The last `spec.test_videos` clips are the test split, the others train: the clips are
    independent draws, so a split by index is a random split that needs no shuffle.
    `encoding` holds write_mp4's keyword arguments (fps, crf, gop, pix_fmt, bframes).
    Raises ValueError when the train split would be empty.
    """
    from reprolab.preprocess.video.encode import write_mp4

    if spec.test_videos >= n_videos:
        raise ValueError(
            f"test_videos ({spec.test_videos}) must be less than n_videos ({n_videos}), "
            f"or the train split is empty"
        )
    out_dir = Path(out_dir)
    train = n_videos - spec.test_videos
    rows = []
    for index in progress(range(n_videos), "motion clips", enabled=show_progress):
        name = clip_name(index)
        video, truth = render_clip(derive_seed(seed, "motion", index), spec)
        write_mp4(out_dir / "videos" / f"{name}.mp4", video, **encoding)
        write_json(out_dir / "annotations" / f"{name}.json", truth)
        rows.append(
            {
                "video": name,
                "split": "train" if index < train else "test",
                "label": truth["label"],
                "label_name": truth["label_name"],
            }
        )
    manifest = pd.DataFrame(rows, columns=["video", "split", "label", "label_name"])
    write_csv(out_dir / "manifest.csv", manifest)
    return manifest
