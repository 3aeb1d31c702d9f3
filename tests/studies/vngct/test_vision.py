"""Pixel values through the model's processor, and tower features cached or per batch."""

from __future__ import annotations

import numpy as np
import torch

from reprolab.core.io import write_h5
from reprolab.studies.vngct.vision import StreamImages, TowerFeatures


def _h5_images(folder, images: np.ndarray) -> list[str]:
    path = folder / "images.h5"
    write_h5(path, {"images": images}, {})
    return [f"h5:{path}#/images/{i}" for i in range(len(images))]


def test_gray_and_rgb_images_become_three_channel_pixels(processor, tmp_path):
    gray = np.zeros((2, 16, 16), dtype=np.uint8)
    gray[0, :, :8], gray[1] = 255, 51
    images = StreamImages(_h5_images(tmp_path, gray), processor.image_processor)
    pixels = images.pixels()
    assert pixels.shape == (2, 3, 16, 16) and pixels.dtype == torch.float32
    expected = torch.as_tensor(gray, dtype=torch.float32) / 127.5 - 1.0  # mean = std = 0.5
    for channel in range(3):
        torch.testing.assert_close(pixels[:, channel], expected)
    torch.testing.assert_close(images.pixels([1, 0]), pixels[[1, 0]])
    images.close()
    rgb = np.zeros((1, 16, 16, 3), dtype=np.uint8)
    rgb[..., 1] = 255
    (tmp_path / "rgb").mkdir()
    pixels = StreamImages(_h5_images(tmp_path / "rgb", rgb), processor.image_processor).pixels()
    assert (pixels[0, 1] == 1.0).all() and (pixels[0, [0, 2]] == -1.0).all()


def test_cached_and_per_batch_features_agree(stream, make_adapter):
    adapter = make_adapter(0)
    cached = TowerFeatures(adapter, stream.images, cache=True, batch_size=7)
    direct = TowerFeatures(adapter, stream.images, cache=False, batch_size=7)
    rows = torch.tensor([5, 0, 5, len(stream.images) - 1])
    torch.testing.assert_close(cached[rows], direct[rows], rtol=1e-5, atol=1e-6)
    whole = adapter.tower_features(stream.images.pixels())
    torch.testing.assert_close(cached[rows], whole[rows], rtol=1e-5, atol=1e-6)
