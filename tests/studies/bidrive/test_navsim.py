"""bidrive's OpenScene/NAVSIM log reader on tiny logs written in the real frame-dict layout
(OpenScene's `create_openscene_metadata.py`): the ego-frame transform in global frames rotated
by 90° and 143°, the expert plan on a straight road and on a curve, speed, command mapping,
agents by distance with their 10 Hz futures matched by track token (a gap and a lost track under
each `missing` rule), masks, kinds, the context vector and the sliding window; bad input (a
corrupt, an unsafe or a malformed log) named in the error or the warning."""

from __future__ import annotations

import logging
import math
import os
import pickle
import pickletools
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from reprolab.studies.bidrive.navsim import (
    COMMAND_FROM_NAVSIM,
    FRAME_KEYS,
    SceneWindows,
    fit_curvature,
    navsim_split,
    quaternion_yaw,
    read_log,
    read_navsim_folder,
    scene_tokens,
    scenes_from_log,
)
from reprolab.studies.bidrive.scenes import COMMANDS, CONTEXT_DIM, KINDS, context_vector

T0_US = 1_623_250_000_000_000  # a nuPlan-like timestamp, µs
STRAIGHT, LEFT, UNKNOWN = [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]
TAU = np.arange(1, 41) * 0.1  # the 10 Hz future times

# an agent at time t: (global x, y, vx, vy), or None where it has no box in that frame
Track = Callable[[float, int], tuple[float, float, float, float] | None]


def quaternion(yaw: float) -> np.ndarray:
    """(w, x, y, z) of a rotation by `yaw` about z."""
    return np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])


def rotate(x: float, y: float, angle: float) -> tuple[float, float]:
    c, s = math.cos(angle), math.sin(angle)
    return c * x - s * y, s * x + c * y


def make_frame(
    log: str,
    k: int,
    ego: tuple[float, float, float, list[float]],
    command: list[int],
    agents: list[tuple[str, str, tuple[float, float, float, float], float, float]],
    route: bool = True,
    time_shift_us: int = 0,
) -> dict:
    """One frame dict as OpenScene writes it: ego pose in the global frame, boxes and velocities
    of the annotations in the ego frame. `ego` is (x, y, yaw, ego_dynamic_state); `agents` are
    (track token, name, (global x, y, vx, vy), length, width)."""
    x, y, yaw, dynamic = ego
    boxes, velocities = [], []
    for _, _, (ax, ay, avx, avy), length, width in agents:
        lx, ly = rotate(ax - x, ay - y, -yaw)
        lvx, lvy = rotate(avx, avy, -yaw)
        heading = math.atan2(avy, avx) if avx or avy else 0.0
        boxes.append([lx, ly, 0.9, length, width, 1.7, heading - yaw])
        velocities.append([lvx, lvy, 0.0])
    names = [a[1] for a in agents]
    translation = np.array([x, y, 0.6])
    return {
        "token": f"{log}-{k:03d}",
        "frame_idx": k,
        "timestamp": T0_US + k * 500_000 + time_shift_us,
        "log_name": log,
        "log_token": f"{log}-token",
        "scene_name": f"log-0001-scene-{k // 20}",
        "scene_token": f"{log}-scene",
        "map_location": "us-nv-las-vegas-strip",
        "roadblock_ids": ["71829", "71830"] if route else [],
        "vehicle_name": "veh-26",
        "can_bus": np.concatenate([translation, quaternion(yaw), np.zeros(11)]),
        "lidar_path": f"{log}/MergedPointCloud/{k:04d}.pcd",
        "lidar2ego_translation": np.array([1.5, 0.0, 1.8]),
        "lidar2ego_rotation": [1.0, 0.0, 0.0, 0.0],
        "ego2global_translation": translation,
        "ego2global_rotation": quaternion(yaw),
        "ego_dynamic_state": list(dynamic),
        "traffic_lights": [(52431, False)],
        "driving_command": np.array(command),
        "cams": {"CAM_F0": {"data_path": f"{log}/CAM_F0/{k:04d}.jpg"}},
        "sample_prev": None,
        "sample_next": None,
        "anns": {
            "gt_boxes": np.array(boxes).reshape(-1, 7),
            "gt_names": np.array(names),
            "gt_velocity_3d": np.array(velocities).reshape(-1, 3),
            "instance_tokens": [f"{a[0]}-{k}" for a in agents],
            "track_tokens": [a[0] for a in agents],
        },
    }


def constant(x0: float, y0: float, vx: float, vy: float, hidden=lambda k: False) -> Track:
    """A constant-velocity track from (x0, y0) at t = 0, without a box in frames `hidden`."""
    return lambda t, k: None if hidden(k) else (x0 + vx * t, y0 + vy * t, vx, vy)


def straight_log(frames: int = 20) -> list[dict]:
    """The ego drives north (yaw 90°) at 10 m/s from (100, 200); in its frame ahead is +x and
    left is +y. A car 80 m ahead in its lane at 4 m/s; a car passing on the left at 15 m/s (no
    box in frame 7 and from frame 10 on); a parked car in the right lane; two far cars; a
    pedestrian 5 m away."""
    cars = {
        "lead": ("vehicle", constant(100.0, 280.0, 0.0, 4.0), 4.6, 1.9),
        "passer": (
            "vehicle",
            constant(96.5, 190.0, 0.0, 15.0, hidden=lambda k: k == 7 or k >= 10),
            4.8,
            2.0,
        ),
        "parked": ("vehicle", constant(103.5, 260.0, 0.0, 0.0), 5.0, 2.1),
        "far": ("vehicle", constant(93.0, 360.0, 0.0, 0.0), 4.4, 1.8),
        "behind": ("vehicle", constant(100.0, 80.0, 0.0, 0.0), 4.5, 1.85),
        "walker": ("pedestrian", constant(98.0, 204.0, 0.0, 1.0), 0.7, 0.7),
    }
    log = []
    for k in range(frames):
        t = 0.5 * k
        present = [
            (token, name, state, length, width)
            for token, (name, track, length, width) in cars.items()
            if (state := track(t, k)) is not None
        ]
        ego = (100.0, 200.0 + 10.0 * t, math.pi / 2, [10.0, 0.0, 0.0, 0.0])
        log.append(make_frame("a_straight", k, ego, STRAIGHT, present))
    return log


RADIUS, PSI0, CENTRE = 100.0, 2.5, (-50.0, 40.0)


def curve_log(frames: int = 14, time_shift_from: int | None = None) -> list[dict]:
    """The ego on a left circle of radius 100 m at 10 m/s (heading 2.5 rad at t = 0), no
    annotation, command left except "unknown" in frame 4, no route in frame 5, and
    ego_dynamic_state (9.6, 2.8) (speed 10). Frames from `time_shift_from` on are 0.5 s late."""
    log = []
    for k in range(frames):
        psi = PSI0 + 0.1 * 0.5 * k
        x, y = CENTRE[0] + RADIUS * math.sin(psi), CENTRE[1] - RADIUS * math.cos(psi)
        shift = 500_000 if time_shift_from is not None and k >= time_shift_from else 0
        command = UNKNOWN if k == 4 else LEFT
        ego = (x, y, psi, [9.6, 2.8, 0.1, 0.0])
        log.append(make_frame("b_curve", k, ego, command, [], route=k != 5, time_shift_us=shift))
    return log


def cut_in_log() -> list[dict]:
    """The ego drives east (yaw 0) at 10 m/s; a car 15 m ahead in the left lane at 8 m/s moves
    into the ego lane between 2.5 and 4.5 s."""

    def cutter(t: float, k: int) -> tuple[float, float, float, float]:
        u = min(max((t - 2.5) / 2.0, 0.0), 1.0)
        vy = -3.5 / 2.0 if 0.0 < u < 1.0 else 0.0
        return 15.0 + 8.0 * t, 3.5 * (1.0 - u), 8.0, vy

    log = []
    for k in range(13):
        t = 0.5 * k
        agents = [("cutter", "vehicle", cutter(t, k), 4.7, 1.9)]
        log.append(make_frame("c_cut", k, (10.0 * t, 0.0, 0.0, [10.0, 0, 0, 0]), STRAIGHT, agents))
    return log


def numpy1_protocol5(value: object) -> bytes:
    """`value` pickled at protocol 5 as numpy 1 writes it (the released logs): arrays built by
    ``numpy.core.numeric._frombuffer``. The FRAME opcodes (optional) are dropped so that the
    module name can be renamed in place."""
    data = pickle.dumps(value, protocol=5)
    ops = list(pickletools.genops(data))
    ends = [pos for _, _, pos in ops[1:]] + [len(data)]
    kept = b"".join(
        data[pos:end] for (op, _, pos), end in zip(ops, ends, strict=True) if op.name != "FRAME"
    )
    new, old = b"numpy.core.numeric", b"numpy._core.numeric"
    renamed = kept.replace(b"\x8c" + bytes([len(old)]) + old, b"\x8c" + bytes([len(new)]) + new)
    assert renamed != kept
    return renamed


def write(path: Path, value: object, protocol: int = pickle.HIGHEST_PROTOCOL) -> Path:
    with open(path, "wb") as fh:
        pickle.dump(value, fh, protocol=protocol)
    return path


@pytest.fixture(scope="module")
def straight() -> list[dict]:
    return straight_log()


# ---------------------------------------------------------------------------------------------
# frames and transforms


def test_quaternion_yaw_matches_the_rotation_for_any_sign_or_scale():
    for yaw in (0.0, 0.3, math.pi / 2, -2.0, 3.1):
        q = quaternion(yaw)
        for version in (q, -q, 3.0 * q):
            assert quaternion_yaw(version) == pytest.approx(yaw, abs=1e-12)


def test_read_log_returns_the_frames_and_the_numpy_1_names_of_released_logs(tmp_path):
    log = curve_log()
    frames = read_log(write(tmp_path / "b.pkl", log))
    assert len(frames) == 14 and frames[3]["token"] == "b_curve-003"
    np.testing.assert_array_equal(frames[3]["ego2global_rotation"], log[3]["ego2global_rotation"])
    # numpy 1 wrote numpy.core.*: such a pickle loads under numpy 2 without its warning
    data = pickle.dumps(straight_log(13), protocol=2).replace(b"cnumpy._core.", b"cnumpy.core.")
    assert b"cnumpy.core.multiarray\n_reconstruct" in data
    (tmp_path / "old.pkl").write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        old = read_log(tmp_path / "old.pkl")
    np.testing.assert_array_equal(
        old[5]["anns"]["gt_boxes"], straight_log(13)[5]["anns"]["gt_boxes"]
    )
    (tmp_path / "v1.pkl").write_bytes(numpy1_protocol5(log))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        released = read_log(tmp_path / "v1.pkl")
    translation = released[7]["ego2global_translation"]
    np.testing.assert_array_equal(translation, log[7]["ego2global_translation"])
    assert released[7]["anns"]["gt_boxes"].shape == (0, 7)


# ---------------------------------------------------------------------------------------------
# scenes


def test_straight_log_in_a_rotated_frame(straight):
    scenes = scenes_from_log(straight, source="a_straight.pkl")
    assert len(scenes) == 9  # 20 frames: current frames 3 … 11
    assert scene_tokens(straight) == [f"a_straight-{k:03d}" for k in range(3, 12)]
    expected = np.stack([10.0 * np.arange(1, 9) * 0.5, np.zeros(8)], axis=-1)
    np.testing.assert_allclose(scenes.expert, np.broadcast_to(expected, (9, 8, 2)), atol=1e-9)
    np.testing.assert_allclose(scenes.ego_speed, 10.0)
    assert (scenes.command == COMMANDS.index("straight")).all()
    np.testing.assert_allclose(
        scenes.road, np.broadcast_to([5.25, 0.0, 3.0, 0.0], (9, 4)), atol=1e-12
    )
    # current frame 3 (t = 1.5 s): the 4 nearest vehicles, the pedestrian and the 5th car left out
    first = scenes.agents[0]
    np.testing.assert_allclose(
        first,
        [
            [-2.5, 3.5, 15.0, 0.0, 4.8, 2.0, 1.0],  # passer, 4.3 m
            [45.0, -3.5, 0.0, 0.0, 5.0, 2.1, 1.0],  # parked, right lane
            [71.0, 0.0, 4.0, 0.0, 4.6, 1.9, 1.0],  # lead, in the ego lane
            [-135.0, 0.0, 0.0, 0.0, 4.5, 1.85, 1.0],  # behind; "far" (145 m) is 5th
        ],
        atol=1e-9,
    )
    future = scenes.agents_future[0]
    assert future.shape == (4, 40, 2)
    # the passer has no box at 2.0 s (frame 7) and none from 3.5 s on: interpolated, then moved
    # on at its last velocity, which is its true path here
    np.testing.assert_allclose(future[0], np.stack([-2.5 + 15 * TAU, np.full(40, 3.5)], -1))
    np.testing.assert_allclose(future[1], np.broadcast_to([45.0, -3.5], (40, 2)), atol=1e-9)
    np.testing.assert_allclose(future[2], np.stack([71.0 + 4 * TAU, np.zeros(40)], -1), atol=1e-9)
    # once the passer's track is gone for good (current frames 10, 11) it is no agent
    assert not np.isclose(scenes.agents[7:, :, 4], 4.8).any()
    assert (scenes.agents[..., 6] == 1.0).all()


def test_a_duplicated_track_token_keeps_its_first_box(straight):
    log = [dict(frame, anns=dict(frame["anns"])) for frame in straight]
    anns = log[3]["anns"]
    extra = np.array([[20.0, -1.0, 0.9, 4.0, 1.7, 1.5, 0.0]])
    anns["gt_boxes"] = np.concatenate([extra, anns["gt_boxes"]])
    anns["gt_velocity_3d"] = np.concatenate([np.zeros((1, 3)), anns["gt_velocity_3d"]])
    anns["gt_names"] = np.concatenate([["vehicle"], anns["gt_names"]])
    anns["track_tokens"] = ["passer", *anns["track_tokens"]]
    agents = scenes_from_log(log).agents[0]
    # the first "passer" box is the agent; the other slots keep their own boxes
    np.testing.assert_allclose(agents[0], [20.0, -1.0, 0.0, 0.0, 4.0, 1.7, 1.0])
    np.testing.assert_allclose(agents[1:, [0, 4]], [[45.0, 5.0], [71.0, 4.6], [-135.0, 4.5]])


def test_missing_boxes_can_be_held_or_masked(straight):
    held = scenes_from_log(straight, SceneWindows(missing="hold")).agents_future[0, 0]
    np.testing.assert_allclose(held[:, 0], -2.5 + 15 * np.minimum(TAU, 3.0))
    masked = scenes_from_log(straight, SceneWindows(missing="mask"))
    # only cars with a box in every future frame fill the slots: the passer is replaced by "far"
    np.testing.assert_allclose(masked.agents[0, :, 4], [5.0, 4.6, 4.5, 4.4])
    np.testing.assert_allclose(masked.agents_future[0, 3], np.broadcast_to([145.0, 7.0], (40, 2)))


def test_kinds_modes_and_the_context_vector(straight):
    scenes = scenes_from_log(straight)
    # the slow lead (4 m/s ≤ ½ · 10 m/s) counts once it is within 60 m: from frame 7 (59 m) on
    assert [KINDS[k] for k in scenes.kind] == ["free"] * 4 + ["lead"] * 5
    assert (scenes.mode == -1).all() and (scenes.mode_ids == -1).all()
    np.testing.assert_array_equal(scenes.mode_plans[:, 0], scenes.expert)
    assert (scenes.mode_plans[:, 1:] == 0.0).all()
    assert scenes.mode_valid.tolist() == [[True, False, False]] * 9
    assert scenes.ctx.shape == (9, CONTEXT_DIM)
    np.testing.assert_array_equal(
        scenes.ctx, context_vector(scenes.ego_speed, scenes.command, scenes.road, scenes.agents)
    )
    np.testing.assert_array_equal(scenes.ctx[:, 1:4], np.broadcast_to([0, 1, 0], (9, 3)))
    np.testing.assert_array_equal(scenes.ctx[:, 8:15], scenes.agents[:, 0])
    cut = scenes_from_log(cut_in_log())
    assert len(cut) == 2 and [KINDS[k] for k in cut.kind] == ["cut_in", "cut_in"]
    np.testing.assert_allclose(cut.agents[0, 0, :4], [12.0, 3.5, 8.0, 0.0], atol=1e-9)
    assert cut.agents_future[0, 0, -1, 1] == pytest.approx(0.0, abs=1e-9)


def test_curve_in_a_rotated_frame_commands_and_route():
    log = curve_log()
    scenes = scenes_from_log(log)
    # current frames 3, 4, 5: frame 5 has no route and is dropped as NAVSIM's has_route does
    assert scene_tokens(log) == ["b_curve-003", "b_curve-004"]
    assert len(scenes) == 2
    phi = 0.1 * np.arange(1, 9) * 0.5  # heading change after 0.5 … 4 s
    expected = np.stack([RADIUS * np.sin(phi), RADIUS * (1 - np.cos(phi))], axis=-1)
    np.testing.assert_allclose(scenes.expert, np.broadcast_to(expected, (2, 8, 2)), atol=1e-9)
    np.testing.assert_allclose(scenes.road[:, 1], 1.0 / RADIUS, rtol=1e-9)  # fitted curvature
    # left → left; unknown (frame 4) → straight
    assert [COMMANDS[c] for c in scenes.command] == ["left", "straight"]
    assert COMMAND_FROM_NAVSIM == (0, 1, 2, 1)
    np.testing.assert_allclose(scenes.ego_speed, 10.0)  # |(9.6, 2.8)|
    assert (scenes.agents == 0.0).all() and (scenes.agents_future == 0.0).all()
    assert (scenes.kind == KINDS.index("free")).all()
    assert len(scenes_from_log(log, SceneWindows(require_route=False))) == 3
    assert scene_tokens(log, SceneWindows(future=10)) == ["b_curve-003"]  # 14 frames = 4 + 10
    assert len(scenes_from_log(log, SceneWindows(tokens={"b_curve-004", "other"}))) == 1


def test_windows_need_regular_frames_and_the_options_are_checked(straight):
    assert len(scenes_from_log(straight, SceneWindows(future=10))) == 7
    assert len(scenes_from_log(straight, SceneWindows(stride=4))) == 3  # current frames 3, 7, 11
    assert len(scenes_from_log(straight[:11])) == 0
    # a missing frame (0.5 s late from frame 8) breaks every window across it
    late = scenes_from_log(curve_log(time_shift_from=8))
    assert len(late) == 0 and late.agents_future.shape == (0, 4, 40, 2)
    with pytest.raises(ValueError, match="future: need an integer >= 8"):
        scenes_from_log(straight, SceneWindows(future=6))
    with pytest.raises(ValueError, match="missing: need one of"):
        scenes_from_log(straight, SceneWindows(missing="drop"))
    with pytest.raises(ValueError, match="ego_offset"):
        scenes_from_log(straight, SceneWindows(lanes=2, ego_offset=4.0))


def test_curvature_fit():
    assert fit_curvature(np.array([[5.0, 0.1], [9.0, -0.1]])) == 0.0  # shorter than 10 m
    s = np.linspace(-15, 40, 12)
    circle = np.stack([np.sin(s / 50) * 50, (1 - np.cos(s / 50)) * -50], -1)  # right, 50 m
    assert fit_curvature(circle) == pytest.approx(-0.02, rel=1e-9)


# ---------------------------------------------------------------------------------------------
# folders and bad input


class Exploit:
    """A pickle that runs a shell command when loaded with the standard unpickler."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_folder_skips_a_corrupt_and_an_unsafe_log_and_reads_the_rest(tmp_path, caplog):
    write(tmp_path / "a_straight.pkl", straight_log())
    write(tmp_path / "b_curve.pkl", curve_log())
    whole = pickle.dumps(straight_log(), protocol=pickle.HIGHEST_PROTOCOL)
    (tmp_path / "c_corrupt.pkl").write_bytes(whole[: len(whole) // 2])
    marker = tmp_path / "pwned"
    write(tmp_path / "d_unsafe.pkl", [Exploit(marker)])
    (tmp_path / "notes.txt").write_text("not a log")
    with caplog.at_level(logging.WARNING):
        scenes = read_navsim_folder(tmp_path)
    assert not marker.exists()
    assert len(scenes) == 9 + 2
    np.testing.assert_array_equal(scenes.expert[:9], scenes_from_log(straight_log()).expert)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2
    assert "c_corrupt.pkl" in warned[0] and "not a readable OpenScene/NAVSIM log" in warned[0]
    assert "d_unsafe.pkl" in warned[1]
    assert "refused to load the global" in warned[1] and ".system" in warned[1]
    assert len(read_navsim_folder(tmp_path, max_logs=1)) == 9


def test_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        read_navsim_folder(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match=r"no \*\.pkl log"):
        read_navsim_folder(tmp_path)
    (tmp_path / "broken.pkl").write_bytes(b"\x80\x05 not a pickle")
    with pytest.raises(ValueError, match=r"no log could be read \(1 tried\): broken\.pkl"):
        read_navsim_folder(tmp_path)
    write(tmp_path / "late.pkl", curve_log(time_shift_from=8))
    with pytest.raises(ValueError, match="1 log\\(s\\) read but none holds a scene"):
        read_navsim_folder(tmp_path)
    with pytest.raises(ValueError, match="max_logs"):
        read_navsim_folder(tmp_path, max_logs=0)


def navsim_spec(root: Path, validation_logs: int = 1) -> dict:
    """bidrive's `scenes.navsim` params for a trainval folder of a straight, a curved and a
    second straight log and a test folder of one curved log, under `root`."""
    (root / "trainval").mkdir()
    (root / "test").mkdir()
    write(root / "trainval" / "a.pkl", straight_log())
    write(root / "trainval" / "b.pkl", curve_log())
    write(root / "trainval" / "c.pkl", straight_log(frames=16))
    write(root / "test" / "t.pkl", curve_log())
    return {
        "trainval": str(root / "trainval"),
        "test": str(root / "test"),
        "validation_logs": validation_logs,
        "stride": 1,
        "missing": "extrapolate",
    }


def test_trainval_logs_split_at_a_log_boundary(tmp_path):
    spec = navsim_spec(tmp_path)
    train, validation = navsim_split(spec, "train"), navsim_split(spec, "validation")
    assert len(train) == 9 + 2 and len(validation) == 5
    np.testing.assert_array_equal(
        validation.expert, scenes_from_log(straight_log(frames=16)).expert
    )
    np.testing.assert_array_equal(
        navsim_split(spec, "test").expert, scenes_from_log(curve_log()).expert
    )
    with pytest.raises(ValueError, match=r"validation_logs: need 1 … 2 .* holds 3 logs\), got 3"):
        navsim_split({**spec, "validation_logs": 3}, "validation")
    with pytest.raises(ValueError, match="expected one of"):
        navsim_split(spec, "dev")


def test_unsafe_pickle_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "pwned"
    path = write(tmp_path / "evil.pkl", [Exploit(marker)])
    with pytest.raises(ValueError, match=r"evil\.pkl: .*refused to load the global \w+\.system"):
        read_log(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("where", "key"),
    [(None, "ego_dynamic_state"), (None, "anns"), ("anns", "track_tokens"), ("anns", "gt_boxes")],
)
def test_a_frame_missing_a_key_is_named_with_the_file(tmp_path, where, key):
    log = curve_log()
    del (log[6] if where is None else log[6][where])[key]
    path = write(tmp_path / "holed.pkl", log)
    with pytest.raises(ValueError, match=rf"holed\.pkl: frame 6 .*missing key '{key}'"):
        read_log(path)
    assert key in FRAME_KEYS or where == "anns"


def test_malformed_values_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_log(tmp_path / "absent.pkl")
    with pytest.raises(ValueError, match=r"dict\.pkl: an OpenScene/NAVSIM log holds a list"):
        read_log(write(tmp_path / "dict.pkl", {"frames": []}))
    log = straight_log(13)
    log[2]["driving_command"] = np.array([0, 1, 1, 0])
    with pytest.raises(ValueError, match=r"cmd\.pkl: frame 2 .*driving_command must be one-hot"):
        read_log(write(tmp_path / "cmd.pkl", log))
    log = straight_log(13)
    log[4]["anns"]["gt_boxes"] = log[4]["anns"]["gt_boxes"][:, :5]
    with pytest.raises(ValueError, match=r"frame 4 .*gt_boxes'\] must be numbers \[6 x 7\]"):
        read_log(write(tmp_path / "boxes.pkl", log))
    log = straight_log(13)
    log[1]["ego2global_rotation"] = [0.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="non-zero quaternion"):
        scenes_from_log(log, source="zero.pkl")
