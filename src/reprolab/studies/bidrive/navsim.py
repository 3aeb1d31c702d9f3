"""bidrive's reader of real driving logs: OpenScene / NAVSIM v1 log pickles (the card's paper
config, section 5: navtrain / navtest are built on OpenScene's nuPlan logs) turned into the
`scenes.Scenes` arrays the study's jobs use, so the planners train and are scored on real scenes
with the same code as on the synthetic ones.

The format (read from the public devkits: navsim `navsim/common/dataclasses.py`,
`navsim/common/dataloader.py`, `navsim/common/enums.py`,
`navsim/planning/scenario_builder/navsim_scenario_utils.py`, `docs/agents.md`, the navtrain scene
filter, and OpenScene's `DriveEngine/process_data/create_openscene_metadata.py`,
`helpers/canbus.py`, `helpers/driving_command.py`). One pickle per nuPlan log
(`{log_name}.pkl`) holds a list of frame dicts in time order, one every 10th 20 Hz lidar sweep,
so 2 Hz. The keys this reader uses (`FRAME_KEYS`, `ANNOTATION_KEYS`):

* ``token`` (str) and ``timestamp`` (int, µs);
* ``ego2global_translation`` (x, y, z) and ``ego2global_rotation``, a quaternion (w, x, y, z),
  of the ego (nuPlan's rear axle) in the global map frame;
* ``ego_dynamic_state`` (vx, vy, ax, ay) in the ego frame;
* ``driving_command``, a one-hot int[4] (left, forward, right, unknown);
* ``roadblock_ids`` (the route; NAVSIM's scene filter drops frames without one);
* ``anns``: ``gt_boxes`` [M, 7] (x, y, z, length, width, height, yaw) in that frame's ego frame
  (yaw relative to the ego heading), ``gt_names`` [M] (vehicle, pedestrian, bicycle,
  traffic_cone, barrier, czone_sign, generic_object), ``gt_velocity_3d`` [M, 3] and
  ``track_tokens`` [M] (one object keeps its token across frames). OpenScene rotates the
  velocities into the lidar frame; NAVSIM's `annotations_to_detection_tracks` uses them as ego-frame
  vectors (it rotates them by the ego heading only), and so does this reader.

Scenes. As NAVSIM's `SceneFilter` (navtrain / navtest: 4 history frames, the last of them the
current one, and `frame_interval` 1), `scenes_from_log` slides a window over a log's frames: every
`stride`-th frame with `history - 1` frames before it and `future` frames after it is the
current frame of a scene (frames i − history + 1 … i + future). NAVSIM's navtrain filter asks for
10 future frames but its trajectory target, `Scene.get_future_trajectory` with
`TrajectorySampling(time_horizon=4, interval_length=0.5)`, takes the first 8, as here (`future`
must be ≥ 8). As `has_route` does, windows whose current frame has no ``roadblock_ids`` are
dropped (`require_route`), and `tokens` keeps only the scenes whose current frame token is listed
(navtrain / navtest are such token lists over the trainval / test logs). OpenScene leaves out
frames whose sensor files are missing, so two list neighbours can be 1 s apart: a window whose
frames are not 0.5 s ± `FRAME_DT_TOLERANCE` apart is dropped.

Ego frame. The ego pose is (x, y, yaw) with the yaw taken from the quaternion as pyquaternion's
`yaw_pitch_roll[0]` computes it (NAVSIM's and OpenScene's convention, `quaternion_yaw`); a global
point p is (R(−yaw)·(p − t)) in the ego frame of pose (t, yaw), NAVSIM's
`convert_absolute_to_relative_se2_array`. The expert plan [8, 2] is the ego positions of the next
8 frames (0.5 … 4 s) in the current ego frame, NAVSIM's human trajectory without its headings.
The points are the rear axle's, as in NAVSIM; the synthetic scorer centres its 5 × 2 m box on
the plan point, so on real logs its box sits about 1.5 m behind the real car's centre.
Ego speed is |(vx, vy)| of ``ego_dynamic_state`` (so a reversing car has a positive speed).

Command. NAVSIM's one-hot (left, forward, right, unknown) maps onto `scenes.COMMANDS` as left →
"left", forward → "straight", right → "right" and unknown (no usable route) → "straight"
(`COMMAND_FROM_NAVSIM`). "Left" and "right" mean the route bends more than 2 m sideways 20 m
ahead (turns, lane changes, sharp curves), a looser notion than the synthetic scenes' lane-change
commands.

Agents. Only ``vehicle`` boxes are agents (the synthetic world and its scorer hold cars only:
pedestrians, bicycles and static objects are left out, so the synthetic NC and TTC miss
collisions with them); annotations with a non-finite position, size or velocity are ignored.
The 4 vehicles nearest to the ego at t = 0 (centre distance, as TransFuser's agent targets) fill
the slots (x, y, vx, vy, length, width, mask) in the current ego frame, velocities being the
annotated ones rotated into it; empty slots are zero. Their futures [4, 40, 2] at t = 0.1 … 4 s
come from the frames at 0.5 … 4 s, matching track tokens, mapped into the current ego frame and
linearly interpolated to 10 Hz. A vehicle missing from a future frame (the annotation has no box
for it there) is handled by `missing`:

* ``"extrapolate"`` (default): across a gap (missing, then seen again) its position is
  interpolated linearly; after its last sighting it moves on at its last annotated velocity.
  Holding it would leave a phantom stopped car on the road (a false NC for the synthetic scorer)
  and masking it would drop a car that is there at t = 0; NAVSIM itself simply has no box then,
  which the one-mask-per-agent `Scenes` layout cannot say. The synthetic scorer also moves agents
  on at their last velocity beyond 4 s.
* ``"hold"``: gaps interpolated, then held at the last seen position.
* ``"mask"``: only vehicles seen in every future frame are candidates for the 4 slots.

A vehicle that first appears after t = 0 is never an agent (the slots are filled at t = 0).

Road (not in the logs: it needs the nuPlan map). The descriptor (half-width, curvature, lanes,
ego offset) is approximated: `lanes` (default 3, the widest road of the study's params) gives
half-width = lanes · 3.5 m / 2, the ego offset is `ego_offset` (default 0: the ego in the middle
lane, so both neighbours exist), and the curvature is the least-squares circle tangent to the
ego heading at the ego, fitted to the ego's own past and future positions in the current ego
frame: κ = 2 Σ y·r² / Σ r⁴ with r² = x² + y² (exact when the path is such a circle; 0 when the
path spans less than `MIN_FIT_EXTENT`, clipped to ±`MAX_FIT_CURVATURE`). The road thus follows
the expert, so a real lane change bends the road a little and a turn at an intersection becomes a
curve. The synthetic PDMS's drivable-area term (DAC, and the lattice behind EP) is therefore only
an approximation on these scenes; NAVSIM's own PDMS needs the navsim devkit with the nuPlan maps
(and its metric cache), and the study's paper-scale numbers must come from it.

Kind, mode, candidates. `kind` is a rule on the agents in the road frame of the approximated road:
"cut_in" if a vehicle ahead within `CUT_IN_RANGE` m outside the ego lane (|e − e₀| ≥ 1.75 m) enters
it (ahead of the ego's t = 0 position) within 4 s; else "lead" if a vehicle in the ego lane ahead
within `LEAD_RANGE` m moves at most `LEAD_SPEED_RATIO` times the ego speed; else "free". The
expert's mode is unknown: `mode` is −1, `mode_plans` holds the expert in slot 0 and zeros
elsewhere, `mode_ids` is −1 everywhere and `mode_valid` is (True, False, False).

Reading. `read_log` loads a pickle with `LogUnpickler`, the project's restricted unpickler of
`studies.ndfa.formats` (`CifarUnpickler`) extended to the few numpy globals a log needs (numpy
scalars, and numpy 1's `numpy.core` names, which the released logs carry), and checks every
frame; bad input raises FileNotFoundError or ValueError naming the file, the frame, the key or
value and what was expected. `read_navsim_folder` reads a folder's ``*.pkl`` logs in sorted order,
skips a log that cannot be read or converted with a logged warning naming it, and raises when no
log could be read or no scene was found.
"""

from __future__ import annotations

import logging
import math
import pickle
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.studies.bidrive.pdms import DT, LANE_WIDTH, N_WAYPOINTS, STEPS, road_frame
from reprolab.studies.bidrive.scenes import (
    AGENT_FEATURES,
    COMMANDS,
    CONTEXT_DIM,
    KINDS,
    MAX_AGENTS,
    N_CANDIDATES,
    Scenes,
    context_vector,
)
from reprolab.studies.ndfa.formats import CIFAR_GLOBALS, CifarUnpickler

LOG = logging.getLogger(__name__)

FRAME_DT = 0.5
"""s between two OpenScene frames (2 Hz)."""
FRAME_DT_TOLERANCE = 0.05
"""s: how far two neighbouring frames of a window may be from `FRAME_DT` apart."""

FRAME_KEYS = (
    "token",
    "timestamp",
    "ego2global_translation",
    "ego2global_rotation",
    "ego_dynamic_state",
    "driving_command",
    "roadblock_ids",
    "anns",
)
"""The keys of a log frame this reader needs (a real frame holds more: cams, lidar_path, ...)."""
ANNOTATION_KEYS = ("gt_boxes", "gt_names", "gt_velocity_3d", "track_tokens")
"""The keys of a frame's ``anns`` dict this reader needs."""

NAVSIM_COMMANDS = ("left", "forward", "right", "unknown")
"""The entries of NAVSIM's one-hot driving command, in order."""
COMMAND_FROM_NAVSIM = tuple(
    COMMANDS.index(name) for name in ("left", "straight", "right", "straight")
)
"""Per NAVSIM command, its index into `scenes.COMMANDS` (forward → straight, unknown →
straight)."""

VEHICLE = "vehicle"
MISSING_MODES = ("extrapolate", "hold", "mask")
MIN_PLAN_FRAMES = N_WAYPOINTS
"""Future frames a window needs at least: the 8 expert waypoints at 0.5 … 4 s."""

MIN_FIT_EXTENT = 10.0
"""m: a path reaching less far from the ego than this gets curvature 0."""
MAX_FIT_CURVATURE = 0.1
"""1/m: the fitted curvature is clipped to ±this (a 10 m radius)."""

LEAD_RANGE = 60.0  # m ahead
LEAD_SPEED_RATIO = 0.5  # a lead moves at most this times the ego speed
CUT_IN_RANGE = 40.0  # m ahead

LOG_GLOBALS = CIFAR_GLOBALS | frozenset(
    {
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("_codecs", "encode"),
    }
)
"""The (module, name) globals a log pickle may import: `CIFAR_GLOBALS` (numpy arrays), numpy 1's
`_frombuffer` (protocol 5 arrays written by numpy 1, as the released logs are), numpy scalars, and
`_codecs.encode`, which Python 3 uses for byte strings at protocol 2. Each builds a value from
bytes and nothing else."""

_NUMPY_2 = int(np.__version__.split(".")[0]) >= 2


# ---------------------------------------------------------------------------------------------
# restricted unpickling


class LogUnpickler(CifarUnpickler):
    """`CifarUnpickler` (the project's restricted unpickler) widened to `LOG_GLOBALS`, with
    errors that speak of a log. Under numpy 2 a numpy 1 ``numpy.core`` name is looked up as
    ``numpy._core`` (what numpy 2 would do, without its deprecation warning).

    The CIFAR unpickler cannot be used as it is: its globals lack numpy scalars and numpy 1's
    `_frombuffer`, which the released OpenScene logs (protocol 5, numpy 1) need, and its error
    names a CIFAR batch. The allowed set is still a fixed list of array builders."""

    def find_class(self, module: str, name: str) -> Any:
        """The global `module.name` when a log may hold it; UnpicklingError naming the file and
        the global otherwise (a crafted pickle would call it while loading)."""
        if (module, name) not in LOG_GLOBALS:
            raise pickle.UnpicklingError(
                f"{self.path}: refused to load the global {module}.{name}: an OpenScene/NAVSIM "
                "log holds only lists and dicts of strings, numbers and numpy arrays (a crafted "
                "or foreign pickle?)"
            )
        if _NUMPY_2 and module.startswith("numpy.core."):
            module = "numpy._core." + module.removeprefix("numpy.core.")
        return pickle.Unpickler.find_class(self, module, name)


# ---------------------------------------------------------------------------------------------
# frames


def quaternion_yaw(quaternion: Sequence[float] | np.ndarray) -> float:
    """The yaw (rad, in [−π, π]) of a quaternion (w, x, y, z), normalised first, as
    pyquaternion's `yaw_pitch_roll[0]`: atan2(2(wz − xy), 1 − 2(y² + z²))."""
    w, x, y, z = np.asarray(quaternion, dtype=float) / np.linalg.norm(quaternion)
    return float(math.atan2(2.0 * (w * z - x * y), 1.0 - 2.0 * (y * y + z * z)))


def _rotate(vectors: np.ndarray, angle: float) -> np.ndarray:
    """2-D vectors [..., 2] rotated by `angle` (rad, counter-clockwise)."""
    c, s = math.cos(angle), math.sin(angle)
    return np.stack(
        [c * vectors[..., 0] - s * vectors[..., 1], s * vectors[..., 0] + c * vectors[..., 1]],
        axis=-1,
    )


def to_ego_frame(points: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """Global points [..., 2] in the ego frame of `pose` (x, y, yaw): R(−yaw)·(p − (x, y))."""
    return _rotate(np.asarray(points, dtype=float) - pose[:2], -float(pose[2]))


@dataclass(frozen=True)
class _Frame:
    """One checked log frame, with its vehicles (finite annotations only)."""

    token: str
    time: float  # s
    pose: np.ndarray  # [3] global x, y, yaw
    speed: float  # m/s
    command: int  # index into COMMANDS
    has_route: bool
    track: dict[str, int]  # vehicle track token -> row
    box: np.ndarray  # [V, 4] x, y, length, width in this frame's ego frame
    velocity: np.ndarray  # [V, 2] in this frame's ego axes
    world_xy: np.ndarray  # [V, 2] global
    world_velocity: np.ndarray  # [V, 2] global axes


def _where(source: str, index: int, frame: Mapping[str, Any]) -> str:
    """'source: frame i (token t)' for error messages."""
    token = frame.get("token")
    return f"{source}: frame {index}" + (f" (token {token!r})" if isinstance(token, str) else "")


def _numbers(value: Any, shape: tuple[int, ...], where: str, key: str) -> np.ndarray:
    """`value` as a float array of `shape` (−1: any length); ValueError naming `key` otherwise."""
    expected = " x ".join("M" if n < 0 else str(n) for n in shape)
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{where}: {key} must be numbers [{expected}], found {type(value).__name__}"
        ) from exc
    ok = array.ndim == len(shape)
    if not ok or any(0 <= n != m for n, m in zip(shape, array.shape, strict=True)):
        raise ValueError(f"{where}: {key} must be numbers [{expected}], found shape {array.shape}")
    return array


def _finite(array: np.ndarray, where: str, key: str) -> np.ndarray:
    """`array` if all finite; ValueError naming `key` otherwise."""
    if not np.isfinite(array).all():
        raise ValueError(f"{where}: {key} must be finite, found {array.tolist()}")
    return array


def _command(value: Any, where: str) -> int:
    """NAVSIM's one-hot (left, forward, right, unknown) as an index into COMMANDS."""
    onehot = _numbers(value, (len(NAVSIM_COMMANDS),), where, "driving_command")
    if not (np.isin(onehot, (0.0, 1.0)).all() and onehot.sum() == 1.0):
        raise ValueError(
            f"{where}: driving_command must be one-hot over {NAVSIM_COMMANDS}, found "
            f"{onehot.tolist()}"
        )
    return COMMAND_FROM_NAVSIM[int(np.argmax(onehot))]


def _annotations(anns: Any, where: str) -> tuple[list[str], np.ndarray, np.ndarray, list[str]]:
    """A frame's (names, boxes [M, 7], velocities [M, 3], track tokens), checked."""
    if not isinstance(anns, Mapping):
        raise ValueError(f"{where}: anns must be a dict, found {type(anns).__name__}")
    for key in ANNOTATION_KEYS:
        if key not in anns:
            raise ValueError(
                f"{where}: anns is missing key {key!r} (expected {', '.join(ANNOTATION_KEYS)}); "
                f"keys found: {sorted(map(str, anns))}"
            )
    names = [str(name) for name in np.asarray(anns["gt_names"]).reshape(-1)]
    tokens = [str(token) for token in np.asarray(anns["track_tokens"]).reshape(-1)]
    m = len(names)
    boxes = np.asarray(anns["gt_boxes"])
    boxes = np.zeros((0, 7)) if m == 0 and boxes.size == 0 else boxes
    boxes = _numbers(boxes, (m, 7), where, "anns['gt_boxes']")
    velocity = np.asarray(anns["gt_velocity_3d"])
    velocity = np.zeros((0, 3)) if m == 0 and velocity.size == 0 else velocity
    velocity = _numbers(velocity, (m, 3), where, "anns['gt_velocity_3d']")
    if len(tokens) != m:
        raise ValueError(
            f"{where}: anns['track_tokens'] must have one token per box ({m}), found {len(tokens)}"
        )
    return names, boxes, velocity, tokens


def _parse_frame(frame: Any, index: int, source: str) -> _Frame:
    """One log frame checked and converted; ValueError naming the file, frame and key."""
    if not isinstance(frame, Mapping):
        raise ValueError(
            f"{source}: frame {index} must be a dict (an OpenScene/NAVSIM frame), found "
            f"{type(frame).__name__}"
        )
    where = _where(source, index, frame)
    for key in FRAME_KEYS:
        if key not in frame:
            raise ValueError(
                f"{where}: missing key {key!r} (an OpenScene/NAVSIM frame holds "
                f"{', '.join(FRAME_KEYS)}, among others)"
            )
    if not isinstance(frame["token"], str):
        raise ValueError(f"{where}: token must be a string, found {type(frame['token']).__name__}")
    timestamp = frame["timestamp"]
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float | np.number):
        raise ValueError(
            f"{where}: timestamp must be a number (µs), found {type(timestamp).__name__}"
        )
    translation = _numbers(frame["ego2global_translation"], (3,), where, "ego2global_translation")
    rotation = _numbers(frame["ego2global_rotation"], (4,), where, "ego2global_rotation")
    _finite(translation, where, "ego2global_translation")
    if not (np.isfinite(rotation).all() and np.linalg.norm(rotation) > 0.0):
        raise ValueError(
            f"{where}: ego2global_rotation must be a non-zero quaternion (w, x, y, z), found "
            f"{rotation.tolist()}"
        )
    dynamic = _numbers(frame["ego_dynamic_state"], (4,), where, "ego_dynamic_state")
    _finite(dynamic[:2], where, "ego_dynamic_state[:2] (vx, vy)")
    roadblocks = frame["roadblock_ids"]
    if not isinstance(roadblocks, Sequence | np.ndarray) or isinstance(roadblocks, str):
        raise ValueError(
            f"{where}: roadblock_ids must be a list of ids, found {type(roadblocks).__name__}"
        )
    names, boxes, velocity, tokens = _annotations(frame["anns"], where)

    pose = np.array([translation[0], translation[1], quaternion_yaw(rotation)])
    keep = np.array([name == VEHICLE for name in names], dtype=bool)
    keep &= np.isfinite(boxes[:, [0, 1, 3, 4]]).all(axis=1) & np.isfinite(velocity[:, :2]).all(1)
    first: dict[str, int] = {}
    for r in np.flatnonzero(keep):
        first.setdefault(tokens[r], int(r))  # one box per track token (the first)
    rows = np.array(list(first.values()), dtype=int)
    box = boxes[rows][:, [0, 1, 3, 4]]
    local_velocity = velocity[rows, :2]
    return _Frame(
        token=frame["token"],
        time=float(timestamp) * 1e-6,
        pose=pose,
        speed=float(np.hypot(dynamic[0], dynamic[1])),
        command=_command(frame["driving_command"], where),
        has_route=len(roadblocks) > 0,
        track={token: j for j, token in enumerate(first)},
        box=box,
        velocity=local_velocity,
        world_xy=_rotate(box[:, :2], float(pose[2])) + pose[:2],
        world_velocity=_rotate(local_velocity, float(pose[2])),
    )


def _parse_frames(frames: Any, source: str) -> list[_Frame]:
    """Every frame of a log, checked; ValueError naming `source` otherwise."""
    if not isinstance(frames, list):
        raise ValueError(
            f"{source}: an OpenScene/NAVSIM log holds a list of frame dicts, found "
            f"{type(frames).__name__}"
        )
    return [_parse_frame(frame, i, source) for i, frame in enumerate(frames)]


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """One OpenScene/NAVSIM log pickle as its list of frame dicts (`LogUnpickler`), every frame
    checked to hold `FRAME_KEYS` and `ANNOTATION_KEYS` in the expected shapes.

    Raises FileNotFoundError for a missing file and ValueError naming the file (and the frame
    and key) for anything else: an unreadable or unsafe pickle, a value that is not a list, a
    frame that is not a log frame."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (an OpenScene/NAVSIM log pickle expected)")
    try:
        with path.open("rb") as fh:
            frames = LogUnpickler(fh, path).load()
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        ImportError,
        OverflowError,
    ) as exc:
        detail = str(exc).removeprefix(f"{path}: ")
        raise ValueError(f"{path}: not a readable OpenScene/NAVSIM log pickle: {detail}") from exc
    _parse_frames(frames, str(path))
    return frames


# ---------------------------------------------------------------------------------------------
# scenes


@dataclass(frozen=True)
class SceneWindows:
    """How a log is cut into scenes (module docstring): `history` frames up to the current one,
    `future` (≥ 8) after it, every `stride`-th current frame; the road descriptor's `lanes` and
    the ego's `ego_offset` from the road centre (m); what to do with an agent `missing` from a
    future frame (MISSING_MODES); only frames with a route when `require_route`; only the current
    frames whose token is in `tokens` when given. Refuses a bad option, naming it."""

    history: int = 4
    future: int = MIN_PLAN_FRAMES
    stride: int = 1
    lanes: int = 3
    ego_offset: float = 0.0
    missing: str = "extrapolate"
    require_route: bool = True
    tokens: Collection[str] | None = None

    def __post_init__(self) -> None:
        def integer(value: object) -> bool:
            return isinstance(value, int | np.integer) and not isinstance(value, bool)

        if not integer(self.history) or self.history < 1:
            raise ValueError(
                "history: need an integer >= 1 (frames up to the current one), got "
                f"{self.history!r}"
            )
        if not integer(self.future) or self.future < MIN_PLAN_FRAMES:
            raise ValueError(
                f"future: need an integer >= {MIN_PLAN_FRAMES} (the expert's 8 waypoints at "
                f"0.5 … 4 s), got {self.future!r}"
            )
        if not integer(self.stride) or self.stride < 1:
            raise ValueError(f"stride: need an integer >= 1, got {self.stride!r}")
        if not integer(self.lanes) or self.lanes < 1:
            raise ValueError(f"lanes: need a positive integer lane count, got {self.lanes!r}")
        if not abs(self.ego_offset) < 0.5 * LANE_WIDTH * self.lanes:
            raise ValueError(
                f"ego_offset: need |ego_offset| < the half-width {0.5 * LANE_WIDTH * self.lanes} "
                f"m of {self.lanes} lanes, got {self.ego_offset!r}"
            )
        if self.missing not in MISSING_MODES:
            raise ValueError(f"missing: need one of {MISSING_MODES}, got {self.missing!r}")


def _windows(parsed: list[_Frame], options: SceneWindows) -> list[int]:
    """Indices of the current frames of the log's scenes (module docstring)."""
    times = np.array([frame.time for frame in parsed])
    regular = np.abs(np.diff(times) - FRAME_DT) <= FRAME_DT_TOLERANCE
    history, future = options.history, options.future
    wanted = None if options.tokens is None else set(options.tokens)
    current = []
    for i in range(history - 1, len(parsed) - future, options.stride):
        if options.require_route and not parsed[i].has_route:
            continue
        if wanted is not None and parsed[i].token not in wanted:
            continue
        if regular[i - history + 1 : i + future].all():
            current.append(i)
    return current


def scene_tokens(
    frames: list[dict[str, Any]],
    options: SceneWindows = SceneWindows(),
    source: str = "frames",
) -> list[str]:
    """The current-frame tokens (NAVSIM's scene tokens) of the scenes `scenes_from_log` builds
    from `frames` with the same options, in the same order."""
    parsed = _parse_frames(frames, source)
    return [parsed[i].token for i in _windows(parsed, options)]


def fit_curvature(path: np.ndarray) -> float:
    """Curvature (1/m, > 0 left) of the least-squares circle tangent to the x-axis at the origin
    through the ego-frame points `path` [P, 2]: 2 Σ y·r² / Σ r⁴ (module docstring)."""
    r2 = (path**2).sum(axis=-1)
    if len(path) == 0 or np.sqrt(r2.max()) < MIN_FIT_EXTENT:
        return 0.0
    kappa = 2.0 * float((path[:, 1] * r2).sum()) / float((r2 * r2).sum())
    return float(np.clip(kappa, -MAX_FIT_CURVATURE, MAX_FIT_CURVATURE))


def _fill_track(
    samples: np.ndarray, seen: np.ndarray, velocity: np.ndarray, missing: str
) -> np.ndarray:
    """One agent's positions [40, 2] at 0.1 … 4 s from its 2 Hz samples [9, 2] at 0 … 4 s, seen
    where `seen` (always at 0 s), gaps interpolated and the tail after its last sighting filled
    by `missing` ("extrapolate": its last velocity; "hold": its last position)."""
    times = np.arange(len(samples)) * FRAME_DT
    known = np.flatnonzero(seen)
    last = known[-1]
    filled = np.empty_like(samples)
    for c in range(2):
        filled[: last + 1, c] = np.interp(times[: last + 1], times[known], samples[known, c])
    tail = times[last + 1 :] - times[last]
    step = velocity[last] if missing == "extrapolate" else np.zeros(2)
    filled[last + 1 :] = samples[last] + tail[:, None] * step
    dense = np.arange(1, STEPS + 1) * DT
    return np.stack([np.interp(dense, times, filled[:, c]) for c in range(2)], axis=-1)


def _scene_agents(parsed: list[_Frame], i: int, missing: str) -> tuple[np.ndarray, np.ndarray]:
    """The agent slots [4, 7] and their futures [4, 40, 2] of the scene at frame i."""
    now = parsed[i]
    tokens = list(now.track)
    count = len(tokens)
    samples = np.zeros((count, N_WAYPOINTS + 1, 2))
    velocity = np.zeros((count, N_WAYPOINTS + 1, 2))
    seen = np.zeros((count, N_WAYPOINTS + 1), dtype=bool)
    samples[:, 0], velocity[:, 0], seen[:, 0] = now.box[:, :2], now.velocity, True
    for k in range(1, N_WAYPOINTS + 1):
        frame = parsed[i + k]
        pairs = [(j, frame.track[t]) for j, t in enumerate(tokens) if t in frame.track]
        if not pairs:
            continue
        mine, theirs = [j for j, _ in pairs], [r for _, r in pairs]
        samples[mine, k] = to_ego_frame(frame.world_xy[theirs], now.pose)
        velocity[mine, k] = _rotate(frame.world_velocity[theirs], -float(now.pose[2]))
        seen[mine, k] = True
    candidates = np.arange(count) if missing != "mask" else np.flatnonzero(seen.all(axis=1))
    distance = np.hypot(now.box[candidates, 0], now.box[candidates, 1])
    chosen = candidates[np.argsort(distance, kind="stable")[:MAX_AGENTS]]
    agents = np.zeros((MAX_AGENTS, len(AGENT_FEATURES)))
    future = np.zeros((MAX_AGENTS, STEPS, 2))
    for slot, j in enumerate(chosen):
        x, y, length, width = now.box[j]
        agents[slot] = (x, y, now.velocity[j, 0], now.velocity[j, 1], length, width, 1.0)
        future[slot] = _fill_track(samples[j], seen[j], velocity[j], missing)
    return agents, future


def scene_kinds(
    agents: np.ndarray, future: np.ndarray, road: np.ndarray, ego_speed: np.ndarray
) -> np.ndarray:
    """Index into KINDS [N] of scenes by the agent rule of the module docstring."""
    xy = np.concatenate([agents[:, :, None, :2], future], axis=2)  # [N, 4, 41, 2]
    s, e = road_frame(xy, road)
    in_lane = np.abs(e - road[:, 3, None, None]) < 0.5 * LANE_WIDTH
    present = agents[..., 6] > 0.5
    s0 = s[..., 0]
    speed = np.hypot(agents[..., 2], agents[..., 3])
    lead = present & in_lane[..., 0] & (s0 > 0.0) & (s0 <= LEAD_RANGE)
    lead &= speed <= LEAD_SPEED_RATIO * ego_speed[:, None]
    enters = (in_lane[..., 1:] & (s[..., 1:] > 0.0)).any(axis=-1)
    cut = present & ~in_lane[..., 0] & (s0 > 0.0) & (s0 <= CUT_IN_RANGE) & enters
    kind = np.where(lead.any(axis=1), KINDS.index("lead"), KINDS.index("free"))
    return np.where(cut.any(axis=1), KINDS.index("cut_in"), kind).astype(np.int8)


def empty_scenes() -> Scenes:
    """A `Scenes` of no scene (the arrays' shapes and dtypes, N = 0)."""
    return Scenes(
        ctx=np.zeros((0, CONTEXT_DIM)),
        ego_speed=np.zeros(0),
        command=np.zeros(0, dtype=np.int8),
        road=np.zeros((0, 4)),
        agents=np.zeros((0, MAX_AGENTS, len(AGENT_FEATURES))),
        agents_future=np.zeros((0, MAX_AGENTS, STEPS, 2)),
        expert=np.zeros((0, N_WAYPOINTS, 2)),
        mode=np.zeros(0, dtype=np.int8),
        kind=np.zeros(0, dtype=np.int8),
        mode_plans=np.zeros((0, N_CANDIDATES, N_WAYPOINTS, 2)),
        mode_ids=np.zeros((0, N_CANDIDATES), dtype=np.int8),
        mode_valid=np.zeros((0, N_CANDIDATES), dtype=bool),
    )


def concatenate_scenes(parts: Sequence[Scenes]) -> Scenes:
    """The scenes of `parts` one after the other."""
    if not parts:
        return empty_scenes()
    return Scenes(
        **{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Scenes)}
    )


def scenes_from_log(
    frames: list[dict[str, Any]],
    options: SceneWindows = SceneWindows(),
    source: str = "frames",
) -> Scenes:
    """The scenes of one log's `frames` (as `read_log` returns them), one per current frame of
    the `options` windows (module docstring). `source` names the log in errors. Returns an
    empty `Scenes` when no window fits."""
    parsed = _parse_frames(frames, source)
    current = _windows(parsed, options)
    history, lanes = options.history, options.lanes
    if not current:
        return empty_scenes()
    n = len(current)
    expert = np.zeros((n, N_WAYPOINTS, 2))
    agents = np.zeros((n, MAX_AGENTS, len(AGENT_FEATURES)))
    agents_future = np.zeros((n, MAX_AGENTS, STEPS, 2))
    road = np.zeros((n, 4))
    for row, i in enumerate(current):
        pose = parsed[i].pose
        ahead = np.array([parsed[i + k].pose[:2] for k in range(1, N_WAYPOINTS + 1)])
        behind = np.array([parsed[k].pose[:2] for k in range(i - history + 1, i)]).reshape(-1, 2)
        expert[row] = to_ego_frame(ahead, pose)
        path = np.concatenate([to_ego_frame(behind, pose), expert[row]])
        road[row] = (0.5 * LANE_WIDTH * lanes, fit_curvature(path), lanes, options.ego_offset)
        agents[row], agents_future[row] = _scene_agents(parsed, i, options.missing)
    ego_speed = np.array([parsed[i].speed for i in current])
    command = np.array([parsed[i].command for i in current], dtype=np.int8)
    mode_plans = np.zeros((n, N_CANDIDATES, N_WAYPOINTS, 2))
    mode_plans[:, 0] = expert
    mode_valid = np.zeros((n, N_CANDIDATES), dtype=bool)
    mode_valid[:, 0] = True
    return Scenes(
        ctx=context_vector(ego_speed, command, road, agents),
        ego_speed=ego_speed,
        command=command,
        road=road,
        agents=agents,
        agents_future=agents_future,
        expert=expert,
        mode=np.full(n, -1, dtype=np.int8),
        kind=scene_kinds(agents, agents_future, road, ego_speed),
        mode_plans=mode_plans,
        mode_ids=np.full((n, N_CANDIDATES), -1, dtype=np.int8),
        mode_valid=mode_valid,
    )


def log_paths(folder: str | Path) -> list[Path]:
    """The folder's ``*.pkl`` logs in sorted name order. Raises FileNotFoundError for a missing
    folder or one without logs."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder}: no such folder (a folder of OpenScene/NAVSIM log pickles *.pkl expected)"
        )
    paths = sorted(p for p in folder.glob("*.pkl") if p.is_file())
    if not paths:
        raise FileNotFoundError(
            f"{folder}: no *.pkl log in the folder (OpenScene/NAVSIM logs "
            "are one {log_name}.pkl per log)"
        )
    return paths


def read_navsim_logs(
    paths: Sequence[Path], options: SceneWindows = SceneWindows(), where: str = "logs"
) -> Scenes:
    """The scenes of the logs `paths`, log after log (`read_log`, `scenes_from_log` with
    `options`); `where` names them in messages.

    A log that cannot be read or converted is skipped with a warning naming it and why. Raises
    ValueError when no log could be read or the logs hold no scene."""
    parts, skipped = [], []
    for path in paths:
        try:
            frames = read_log(path)
            parts.append(scenes_from_log(frames, options, source=str(path)))
        except ValueError as exc:
            LOG.warning("skipped log %s: %s", path, exc)
            skipped.append(f"{Path(path).name} ({exc})")
    if not parts:
        raise ValueError(
            f"{where}: no log could be read ({len(skipped)} tried): " + "; ".join(skipped)
        )
    scenes = concatenate_scenes(parts)
    if len(scenes) == 0:
        raise ValueError(
            f"{where}: {len(parts)} log(s) read but none holds a scene (a current frame with "
            f"{options.history - 1} frames before it and {options.future} after it, 0.5 s "
            "apart"
            + (", with a route" if options.require_route else "")
            + (", among the tokens given)" if options.tokens is not None else ")")
        )
    LOG.info(
        "read %d scenes from %d logs in %s (%d skipped)",
        len(scenes),
        len(parts),
        where,
        len(skipped),
    )
    return scenes


def read_navsim_folder(
    folder: str | Path,
    max_logs: int | None = None,
    options: SceneWindows = SceneWindows(),
) -> Scenes:
    """The scenes of the first `max_logs` (all when None) of the folder's ``*.pkl`` logs in
    sorted name order (`log_paths`, `read_navsim_logs`)."""
    if max_logs is not None and (
        isinstance(max_logs, bool) or not isinstance(max_logs, int) or max_logs < 1
    ):
        raise ValueError(f"max_logs: need a positive integer or None, got {max_logs!r}")
    return read_navsim_logs(log_paths(folder)[:max_logs], options, str(folder))


SPLITS = ("train", "validation", "test")
"""The splits `navsim_split` reads."""


def navsim_split(spec: Mapping[str, Any], split: str) -> Scenes:
    """The scenes of `split` from bidrive's params `scenes.navsim`: the logs of folder
    `trainval` split at a log boundary (the last `validation_logs` logs in name order are the
    validation split, the rest the training split, so that no validation window shares a frame
    with a training window), and the logs of folder `test` as the test split; each cut into
    windows every `stride` frames, agents missing from a future frame handled by `missing`."""
    if split not in SPLITS:
        raise ValueError(f"navsim split: expected one of {SPLITS}, got {split!r}")
    options = SceneWindows(stride=int(spec["stride"]), missing=str(spec["missing"]))
    if split == "test":
        return read_navsim_logs(log_paths(spec["test"]), options, str(spec["test"]))
    paths, held_out = log_paths(spec["trainval"]), int(spec["validation_logs"])
    if not 1 <= held_out < len(paths):
        raise ValueError(
            f"bidrive.scenes.navsim.validation_logs: need 1 … {len(paths) - 1} (the folder "
            f"{spec['trainval']} holds {len(paths)} logs), got {held_out}"
        )
    chosen = paths[-held_out:] if split == "validation" else paths[:-held_out]
    return read_navsim_logs(chosen, options, f"{spec['trainval']} ({split} logs)")
