"""Bring a clip (uint8 [T, H, W, 3]) to one size, (height, width).

Modes: `pad` (the default) keeps the whole frame and its aspect ratio, scaling it to fit and
centring it on black (letterbox or pillarbox; the odd pixel of a border goes to the bottom or
right); `crop` scales it to cover the target and cuts the centre; `stretch` scales each axis to
the target, changing the aspect ratio. Scaling down uses cv2.INTER_AREA (averages, no
aliasing), scaling up cv2.INTER_LINEAR. A clip already at the target size is returned as is.
"""

from __future__ import annotations

import cv2
import numpy as np

RESIZE_MODES = ("pad", "crop", "stretch")


def _scale(frames: np.ndarray, height: int, width: int) -> np.ndarray:
    """Every frame resized to exactly (height, width)."""
    if frames.shape[1:3] == (height, width):
        return frames
    shrinks = height * width < frames.shape[1] * frames.shape[2]
    interpolation = cv2.INTER_AREA if shrinks else cv2.INTER_LINEAR
    out = np.empty((len(frames), height, width, 3), dtype=np.uint8)
    for i, frame in enumerate(frames):
        out[i] = cv2.resize(frame, (width, height), interpolation=interpolation)
    return out


def resize_clip(frames: np.ndarray, size: tuple[int, int], mode: str = "pad") -> np.ndarray:
    """`frames` (uint8 [T, H, W, 3]) at `size` = (height, width) by `mode` (pad, crop, stretch)."""
    if mode not in RESIZE_MODES:
        raise ValueError(f"resize_mode must be one of {', '.join(RESIZE_MODES)}, got {mode!r}")
    height, width = (int(v) for v in size)
    if height < 1 or width < 1:
        raise ValueError(f"size must be two positive integers [H, W], got {list(size)}")
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"frames must be [T, H, W, 3], got {list(frames.shape)}")
    if frames.shape[1:3] == (height, width) or mode == "stretch":
        return _scale(frames, height, width)
    src_h, src_w = frames.shape[1:3]
    if mode == "pad":
        factor = min(height / src_h, width / src_w)
        new_h = min(height, max(1, round(src_h * factor)))
        new_w = min(width, max(1, round(src_w * factor)))
        out = np.zeros((len(frames), height, width, 3), dtype=np.uint8)
        top, left = (height - new_h) // 2, (width - new_w) // 2
        out[:, top : top + new_h, left : left + new_w] = _scale(frames, new_h, new_w)
        return out
    factor = max(height / src_h, width / src_w)
    cover_h = max(height, round(src_h * factor))
    cover_w = max(width, round(src_w * factor))
    top, left = (cover_h - height) // 2, (cover_w - width) // 2
    scaled = _scale(frames, cover_h, cover_w)
    return np.ascontiguousarray(scaled[:, top : top + height, left : left + width])
