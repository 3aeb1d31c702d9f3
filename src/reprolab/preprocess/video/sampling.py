"""Which frames of a video make a clip: deterministic frame indices, no randomness.

Strategies (`num_frames` = T indices, `frame_count` = n frames in the video):

- `uniform` (TSN's test-time sampling): cut the video into T equal segments of n / T frames
  and take each segment's centre, `floor((i + 0.5) * n / T)`;
- `dense`: T consecutive frames `start, start + stride, ...`;
- `fps`: resample to `target_fps`: target time j is the time of frame `start` plus
  `j / target_fps`, and each target takes the nearest source frame (ties to the earlier one).
  Without `timestamps` the video is taken as constant-rate at `fps`; with them (the frames'
  presentation times in seconds, as a VFR file has them) the nearest frame in time is used.

A clip is *short* when some index would lie past the end: for `uniform` when n < T (then the
segments would be shorter than a frame and repeat frames), for `dense` when
`start + stride * (T - 1) >= n`, for `fps` when a target time falls after the last frame's end.
`short_policy` then decides: `repeat_last` keeps the indices that exist (for `uniform`, every
frame once) and repeats the last one; `wrap` cycles through them; `error` raises
`ClipTooShortError`, naming the counts. A video with no frame, or whose `start` is past its
end, always raises.
"""

from __future__ import annotations

import numpy as np

STRATEGIES = ("uniform", "dense", "fps")
SHORT_POLICIES = ("repeat_last", "wrap", "error")
TIE_SECONDS = 1e-9  # timestamps this close count as a tie (to the earlier frame)


class ClipTooShortError(ValueError):
    """The video has fewer frames than the clip asks for and the policy is `error`."""


def _check(
    frame_count: int,
    num_frames: int,
    strategy: str,
    stride: int,
    short_policy: str,
    start: int,
) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"sampling must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if short_policy not in SHORT_POLICIES:
        raise ValueError(
            f"short_policy must be one of {', '.join(SHORT_POLICIES)}, got {short_policy!r}"
        )
    if num_frames < 1:
        raise ValueError(f"num_frames must be at least 1, got {num_frames}")
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    if start < 0:
        raise ValueError(f"start must be non-negative, got {start}")
    if frame_count < 1:
        raise ClipTooShortError("the video has no frames")
    if start >= frame_count:
        raise ClipTooShortError(f"start frame {start} is past the end of {frame_count} frames")


def _fps_indices(
    frame_count: int,
    fps: float,
    num_frames: int,
    target_fps: float | None,
    start: int,
    timestamps: np.ndarray | None,
) -> np.ndarray:
    """Nearest source frame for each target time; -1 for targets past the end."""
    if target_fps is None or not target_fps > 0:
        raise ValueError(f"sampling 'fps' needs a positive target_fps, got {target_fps}")
    offsets = np.arange(num_frames) / target_fps
    if timestamps is None:
        if not fps > 0:
            raise ValueError(f"sampling 'fps' needs the video's fps, got {fps}")
        steps = np.arange(num_frames) * fps / target_fps
        picked = start + np.ceil(steps - 0.5).astype(np.int64)
        return np.where(picked < frame_count, picked, -1)
    times = np.asarray(timestamps, dtype=np.float64)
    if len(times) != frame_count:
        raise ValueError(f"{len(times)} timestamps given for {frame_count} frames")
    last_step = times[-1] - times[-2] if frame_count > 1 else (1.0 / fps if fps > 0 else 0.0)
    targets = times[start] + offsets
    if frame_count == 1:
        picked = np.zeros(num_frames, dtype=np.int64)
    else:
        right = np.clip(np.searchsorted(times, targets, side="left"), 1, frame_count - 1)
        left = right - 1
        nearer_left = targets - times[left] <= times[right] - targets + TIE_SECONDS
        picked = np.where(nearer_left, left, right)
    return np.where(targets < times[-1] + last_step, picked, -1)


def sample_indices(
    frame_count: int,
    fps: float,
    num_frames: int,
    strategy: str = "uniform",
    stride: int = 1,
    target_fps: float | None = None,
    short_policy: str = "repeat_last",
    start: int = 0,
    timestamps: np.ndarray | None = None,
) -> np.ndarray:
    """The `num_frames` frame indices (int64, in clip order) of a clip of a `frame_count`-frame
    video; see the module docstring for the strategies and the short-clip policies."""
    _check(frame_count, num_frames, strategy, stride, short_policy, start)
    if strategy == "uniform":
        if frame_count >= num_frames:
            centres = (np.arange(num_frames) + 0.5) * frame_count / num_frames
            return np.floor(centres).astype(np.int64)
        picked = np.arange(num_frames, dtype=np.int64)
        picked[picked >= frame_count] = -1
    elif strategy == "dense":
        picked = start + stride * np.arange(num_frames, dtype=np.int64)
        picked[picked >= frame_count] = -1
    else:
        picked = _fps_indices(frame_count, fps, num_frames, target_fps, start, timestamps)
    available = picked[picked >= 0]
    if len(available) == num_frames:
        return picked
    if short_policy == "error":
        raise ClipTooShortError(
            f"the clip needs {num_frames} frames ({strategy} sampling, stride {stride}, "
            f"start {start}) but only {len(available)} of them exist in {frame_count} frames"
        )
    if short_policy == "wrap":
        return available[np.arange(num_frames) % len(available)]
    return np.concatenate([available, np.full(num_frames - len(available), available[-1])])
