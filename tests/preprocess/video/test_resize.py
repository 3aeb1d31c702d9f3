"""resize_clip: letterbox by default, centre crop and stretch on request."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from reprolab.preprocess.video.resize import resize_clip


def _clip(height: int, width: int) -> np.ndarray:
    return np.full((2, height, width, 3), 200, dtype=np.uint8)


def test_pad_keeps_the_whole_frame_on_black():
    out = resize_clip(_clip(48, 64), (32, 32))
    assert out.shape == (2, 32, 32, 3)
    content = out[0, :, :, 0] > 0
    # 64x48 fits 32x24, centred: 4 black rows above and below.
    assert content.sum(axis=0).tolist() == [24] * 32
    assert not content[:4].any() and not content[28:].any() and content[4:28].all()
    tall = resize_clip(_clip(64, 32), (32, 32))[0, :, :, 0] > 0
    assert tall.sum(axis=1).tolist() == [16] * 32


def test_pad_downscale_is_inter_area():
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (1, 40, 40, 3), dtype=np.uint8)
    out = resize_clip(frames, (20, 20))
    np.testing.assert_array_equal(
        out[0], cv2.resize(frames[0], (20, 20), interpolation=cv2.INTER_AREA)
    )


def test_crop_and_stretch():
    frames = np.zeros((1, 40, 80, 3), np.uint8)
    frames[:, :, 20:60] = 255  # the centre half is white
    crop = resize_clip(frames, (20, 20), "crop")
    assert crop.shape == (1, 20, 20, 3) and crop.min() == 255
    stretch = resize_clip(frames, (20, 20), "stretch")
    assert stretch.shape == (1, 20, 20, 3)
    assert stretch[0, 10, 0, 0] == 0 and stretch[0, 10, 10, 0] == 255


def test_same_size_is_unchanged_and_bad_modes_are_named():
    frames = _clip(16, 16)
    np.testing.assert_array_equal(resize_clip(frames, (16, 16)), frames)
    with pytest.raises(ValueError, match="resize_mode must be one of pad, crop, stretch"):
        resize_clip(frames, (8, 8), "fit")
    with pytest.raises(ValueError, match="size must be two positive integers"):
        resize_clip(frames, (0, 8))
