"""read_frames is frame-exact: equal, pixel for pixel, to a full sequential decode."""

from __future__ import annotations

import subprocess

import av
import numpy as np
import pytest

from reprolab.preprocess.video.decode import _keyframe_groups, decode_all, read_frames
from reprolab.preprocess.video.probe import (
    VideoDecodeError,
    VideoError,
    VideoOpenError,
    index_stream,
    open_video,
    probe_video,
)
from reprolab.preprocess.video.sampling import sample_indices
from tests.preprocess.video.conftest import FFMPEG, GOOD, ffmpeg, frame_number


@pytest.fixture(scope="module")
def references(videos):
    """decode_all of every good file (and of the truncated file's source)."""
    return {name: decode_all(videos[name]) for name in (*GOOD, "faststart_source.mp4")}


def _requests(count: int, fps: float) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(count)
    return {
        "uniform": sample_indices(count, fps, 16, "uniform"),
        "dense": sample_indices(count, fps, 16, "dense", stride=2, start=count // 3),
        "fps": sample_indices(count, fps, 16, "fps", target_fps=7.0),
        "random_with_repeats": rng.integers(0, count, 24),
        "reversed": np.arange(count)[::-1][:40],
        "ends": np.array([count - 1, 0, count - 1, 1]),
    }


def test_decode_all_gives_every_frame_in_display_order(references):
    for name, clip in references.items():
        numbers = [frame_number(f) for f in clip.frames]
        # The edit list of edit_list.mp4 starts it 33 frames into long_gop.mp4.
        first = 33 if name == "edit_list.mp4" else 0
        assert numbers == list(range(first, first + len(numbers))), name
        assert np.all(np.diff(clip.pts_seconds) > 0), name


def test_decode_all_equals_plain_pyav_single_threaded(videos, references):
    with av.open(str(videos["long_gop.mp4"])) as container:
        container.streams.video[0].thread_type = "NONE"
        plain = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    np.testing.assert_array_equal(references["long_gop.mp4"].frames, np.stack(plain))


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("name", GOOD)
def test_read_frames_equals_decode_all(videos, references, name, threads):
    reference = references[name]
    count = len(reference.frames)
    for strategy, indices in _requests(count, 25.0).items():
        clip = read_frames(videos[name], indices, threads=threads)
        assert clip.indices.tolist() == list(indices), strategy
        np.testing.assert_array_equal(clip.frames, reference.frames[indices], err_msg=strategy)
        np.testing.assert_array_equal(clip.pts_seconds, reference.pts_seconds[indices])


def test_read_frames_uses_vfr_timestamps(videos, references):
    times = references["vfr.mp4"].pts_seconds
    indices = sample_indices(len(times), 25.0, 8, "fps", target_fps=10, timestamps=times)
    clip = read_frames(videos["vfr.mp4"], indices)
    # Each picked frame is the nearest in time to 0, 0.1, 0.2, ... s.
    targets = np.arange(8) / 10
    assert np.all(np.abs(clip.pts_seconds - targets) <= 0.03 + 1e-9)


def test_truncated_file_gives_the_frames_it_has_and_fails_on_the_rest(videos, references):
    source = references["faststart_source.mp4"]
    clip = read_frames(videos["truncated.mp4"], [0, 7, 12])
    np.testing.assert_array_equal(clip.frames, source.frames[[0, 7, 12]])
    with pytest.raises(VideoError, match="out of range; the video has"):
        read_frames(videos["truncated.mp4"], [59])
    count = probe_video(videos["truncated.mp4"])["frame_count"]
    with pytest.raises(VideoDecodeError, match="truncated.mp4: decoding failed"):
        read_frames(videos["truncated.mp4"], [count - 1])
    with pytest.raises(VideoDecodeError, match="truncated.mp4: decoding failed"):
        read_frames(videos["truncated.mp4"], [0, 7, 14, count - 1], threads=2)
    with pytest.raises(VideoDecodeError, match="truncated.mp4: decoding failed"):
        decode_all(videos["truncated.mp4"])


def test_keyframe_groups_split_only_across_keyframes(videos):
    container, stream = open_video(videos["cfr_bframes.mp4"])  # a keyframe every 12 frames
    with container:
        index = index_stream(container, stream)
    wanted = np.array([0, 5, 11, 12, 30, 59])
    groups = _keyframe_groups(index, wanted)
    assert [group.tolist() for group in groups] == [[0, 5, 11], [12], [30], [59]]


def test_out_of_range_names_file_index_and_count(videos):
    with pytest.raises(VideoError, match=r"cfr_bframes.mp4: frame index 60 is out of range; "):
        read_frames(videos["cfr_bframes.mp4"], [3, 60])
    with pytest.raises(VideoError, match=r"has 60 frames \(0..59\)"):
        read_frames(videos["cfr_bframes.mp4"], [-1])
    with pytest.raises(VideoOpenError, match="no video stream"):
        read_frames(videos["audio.mp4"], [0])


def test_empty_request_gives_an_empty_clip(videos):
    clip = read_frames(videos["cfr_bframes.mp4"], [])
    assert clip.frames.shape == (0, 48, 64, 3) and clip.pts_seconds.shape == (0,)


def test_apply_rotation_turns_frames_as_ffmpeg_displays_them(videos, references):
    plain = read_frames(videos["rotated.mp4"], [5])
    turned = read_frames(videos["rotated.mp4"], [5], apply_rotation=True)
    np.testing.assert_array_equal(plain.frames, references["cfr_bframes.mp4"].frames[[5]])
    np.testing.assert_array_equal(turned.frames[0], np.rot90(plain.frames[0]))
    assert decode_all(videos["rotated.mp4"], apply_rotation=True).frames.shape[1:3] == (64, 48)
    # ffmpeg's own autorotation of the same frame (its RGB conversion may differ slightly).
    shown = subprocess.run(
        [FFMPEG, "-loglevel", "error", "-i", str(videos["rotated.mp4"]), "-vf",
         r"select=eq(n\,5)", "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    ffmpeg_frame = np.frombuffer(shown, np.uint8).reshape(64, 48, 3)
    assert np.abs(ffmpeg_frame.astype(int) - turned.frames[0]).mean() < 4
    assert np.abs(ffmpeg_frame.astype(int) - np.rot90(turned.frames[0], 2)).mean() > 20


def test_stream_without_timestamps_falls_back_to_counting(tmp_path, videos, references):
    raw = tmp_path / "raw.h264"  # an Annex B elementary stream: no pts, cannot seek
    ffmpeg("-i", str(videos["cfr_bframes.mp4"]), "-c", "copy", "-bsf:v", "h264_mp4toannexb",
           "-f", "h264", str(raw))  # fmt: skip
    manifest = probe_video(raw)
    assert not manifest["timestamps_ok"] and manifest["frame_count"] == 60
    reference = decode_all(raw)
    np.testing.assert_array_equal(reference.frames, references["cfr_bframes.mp4"].frames)
    clip = read_frames(raw, [40, 5, 0, 40])
    np.testing.assert_array_equal(clip.frames, reference.frames[[40, 5, 0, 40]])
