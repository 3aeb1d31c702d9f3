"""The stream's images as the model sees them: pixel values from its processor, tower features.

`StreamImages` holds the stream's distinct image references (a sample's `Samples.image` is a
position in it) and turns any of them into pixel values with the image processor saved beside
the model (the tiny model's at smoke scale, LLaVA-1.5's CLIP processor at paper scale: resize,
centre crop, normalise), reading them on demand. `TowerFeatures` gives the frozen vision tower's
features of any images: the training loop indexes it like a tensor (``features[batch.image]``).

Choices: gray images are replicated to three channels before the processor (CLIP processors
expect RGB); with ``cache=True`` (smoke scale: a few thousand 16 × 16 images) every image's
features are computed once up front, in batches; without it (paper scale: a CoIN stream holds
hundreds of thousands of images, 576 × 1024 features each) they are computed per batch from
the images it indexes. The tower never trains after alignment, so both give the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from reprolab.core.progress import progress
from reprolab.preprocess.instr.images import ImageLoader
from reprolab.studies.vngct.adapter import MLLMAdapter


class StreamImages:
    """The distinct images of a stream, in order of first use, as pixel values on demand."""

    def __init__(self, references: Sequence[str], image_processor: Any) -> None:
        self.references = list(references)
        self.image_processor = image_processor
        self._loader = ImageLoader()

    def __len__(self) -> int:
        return len(self.references)

    def pixels(self, index: Sequence[int] | torch.Tensor | None = None) -> torch.Tensor:
        """Pixel values ``[n, 3, H, W]`` of the images at `index` (all images when None)."""
        rows = range(len(self)) if index is None else [int(i) for i in index]
        images = self._loader.load_many([self.references[i] for i in rows])
        rgb = [
            np.repeat(image[:, :, None], 3, axis=2) if image.ndim == 2 else image
            for image in images
        ]
        values = self.image_processor(images=rgb, return_tensors="pt")["pixel_values"]
        return torch.as_tensor(values, dtype=torch.float32)

    def close(self) -> None:
        """Close the HDF5 files read so far."""
        self._loader.close()


class TowerFeatures:
    """Frozen-tower features by image position: ``features[rows]`` is ``[len(rows), T, D]``."""

    def __init__(
        self,
        adapter: MLLMAdapter,
        images: StreamImages,
        cache: bool,
        batch_size: int,
        show_progress: bool = False,
    ) -> None:
        self.adapter = adapter
        self.images = images
        self.batch_size = batch_size
        self._cached: torch.Tensor | None = None
        if cache:
            starts = range(0, len(images), batch_size)
            self._cached = torch.cat(
                [
                    self._compute(range(start, min(start + batch_size, len(images))))
                    for start in progress(starts, desc="tower features", enabled=show_progress)
                ]
            )

    def _compute(self, rows: Sequence[int]) -> torch.Tensor:
        device = next(self.adapter.parameters()).device
        return self.adapter.tower_features(self.images.pixels(rows).to(device))

    def __getitem__(self, rows: torch.Tensor) -> torch.Tensor:
        if self._cached is not None:
            return self._cached[rows.to(self._cached.device)]
        return self._compute(rows.tolist())
