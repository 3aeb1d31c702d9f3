"""sample_indices: TSN uniform, dense, fps resampling and the short-clip policies."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.preprocess.video.sampling import ClipTooShortError, sample_indices


def test_uniform_takes_each_segment_centre():
    assert sample_indices(100, 25, 8, "uniform").tolist() == [6, 18, 31, 43, 56, 68, 81, 93]
    assert sample_indices(16, 25, 16, "uniform").tolist() == list(range(16))
    assert sample_indices(3, 25, 1, "uniform").tolist() == [1]


def test_dense_takes_a_strided_run():
    got = sample_indices(100, 25, 4, "dense", stride=3, start=10)
    assert got.tolist() == [10, 13, 16, 19]


def test_fps_resamples_to_the_nearest_frame():
    # 25 fps to 10 fps: target times 0, 0.1, 0.2, ... fall on frames 0, 2.5, 5, 7.5 ...
    assert sample_indices(100, 25, 6, "fps", target_fps=10).tolist() == [0, 2, 5, 7, 10, 12]
    assert sample_indices(100, 25, 3, "fps", target_fps=25, start=4).tolist() == [4, 5, 6]
    times = np.arange(100) / 25
    same = sample_indices(100, 25, 6, "fps", target_fps=10, timestamps=times)
    assert same.tolist() == [0, 2, 5, 7, 10, 12]


def test_fps_uses_real_timestamps_on_variable_rate():
    times = np.array([0.0, 0.02, 0.08, 0.10, 0.16, 0.18, 0.24, 0.26])
    # Targets 0, 0.1, 0.2 s: frames at 0, 0.10 and 0.18 s (the 0.24 s frame is farther).
    got = sample_indices(8, 25, 3, "fps", target_fps=10, timestamps=times)
    assert got.tolist() == [0, 3, 5]
    # Taking the file as 25 fps constant-rate would pick frame 2 (0.08 s) for 0.1 s.
    assert sample_indices(8, 25, 3, "fps", target_fps=10).tolist() == [0, 2, 5]
    # A tie (0.05 s is 0.03 s from both 0.02 and 0.08) goes to the earlier frame.
    assert sample_indices(8, 25, 2, "fps", target_fps=20, timestamps=times).tolist() == [0, 1]


@pytest.mark.parametrize(
    "strategy, kwargs, repeat_last, wrap",
    [
        ("uniform", {}, [0, 1, 2, 2, 2, 2], [0, 1, 2, 0, 1, 2]),
        ("dense", {"stride": 2}, [0, 2, 2, 2, 2, 2], [0, 2, 0, 2, 0, 2]),
        ("fps", {"target_fps": 50}, [0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2]),
        ("fps", {"target_fps": 12.5}, [0, 2, 2, 2, 2, 2], [0, 2, 0, 2, 0, 2]),
    ],
)
def test_short_policies(strategy, kwargs, repeat_last, wrap):
    got = sample_indices(3, 25, 6, strategy, short_policy="repeat_last", **kwargs)
    assert got.tolist() == repeat_last
    assert sample_indices(3, 25, 6, strategy, short_policy="wrap", **kwargs).tolist() == wrap
    if repeat_last != wrap:
        with pytest.raises(ClipTooShortError, match=r"needs 6 frames .* exist in 3 frames"):
            sample_indices(3, 25, 6, strategy, short_policy="error", **kwargs)


def test_bad_requests_are_named():
    with pytest.raises(ValueError, match="sampling must be one of"):
        sample_indices(10, 25, 4, "random")
    with pytest.raises(ValueError, match="target_fps"):
        sample_indices(10, 25, 4, "fps")
    with pytest.raises(ValueError, match="short_policy"):
        sample_indices(10, 25, 4, short_policy="pad")
    with pytest.raises(ClipTooShortError, match="no frames"):
        sample_indices(0, 25, 4)
    with pytest.raises(ClipTooShortError, match="start frame 12 is past the end of 10 frames"):
        sample_indices(10, 25, 4, "dense", start=12)
