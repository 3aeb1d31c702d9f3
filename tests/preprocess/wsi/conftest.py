"""Fixtures of the WSI tests: small real slides (SVS/TIFF) and OpenSlide's own test files.

Slides are drawn procedurally (pink/purple blobs on white, optionally a faint pale region) and
written with `slide_writer.write_slide`, so OpenSlide reads real JPEG-tiled pyramids. The
openslide-python 1.4.7 sdist carries OpenSlide's fixtures (an unreadable SVS, an unopenable
TIFF, a TIFF with a 72-dpi-style bogus MPP, small good slides, a non-ASCII name); it is
downloaded once with pip into pytest's cache and reused.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest
import tifffile

from reprolab.preprocess.wsi.slide_writer import write_slide

BACKGROUND = (244, 243, 245)
STRONG = (200, 110, 190)
PURPLE = (150, 90, 170)
FAINT = (236, 230, 234)
SDIST = "openslide-python==1.4.7"


def faint_box(size: int) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1) of the faint region of `tissue_image(size, faint=True)`."""
    return size // 2 + size // 8, size // 8, size - size // 16, size // 2


def tissue_image(
    size: int = 2048,
    strong: bool = True,
    faint: bool = False,
    seed: int = 0,
) -> np.ndarray:
    """An RGB image: white glass with noise, optional pink/purple blobs and a faint region."""
    rng = np.random.default_rng(seed)
    image = np.empty((size, size, 3), np.uint8)
    image[:] = BACKGROUND
    if strong:
        cv2.circle(image, (size // 4, size // 4), size // 6, STRONG, -1)
        axes = (size // 6, size // 10)
        cv2.ellipse(image, (size // 4, 3 * size // 4), axes, 30, 0, 360, PURPLE, -1)
    if faint:
        x0, y0, x1, y1 = faint_box(size)
        cv2.rectangle(image, (x0, y0), (x1, y1), FAINT, -1)
    noise = rng.integers(-2, 3, image.shape)
    return np.clip(image.astype(np.int16) + noise, 0, 255).astype(np.uint8)


@pytest.fixture
def make_slide(tmp_path: Path) -> Callable[..., Path]:
    """Write a slide: make_slide(name, image=None, mpp=0.5, folder=None, **write_slide args).

    The format follows the suffix; pyramids go down to 256 px unless told otherwise.
    """

    def make(
        name: str,
        image: np.ndarray | None = None,
        mpp: float = 0.5,
        folder: Path | None = None,
        **writer,
    ) -> Path:
        folder = folder or tmp_path / "slides"
        fmt = "tiff" if name.endswith((".tif", ".tiff")) else "svs"
        pixels = tissue_image() if image is None else image
        writer.setdefault("min_level_size", 256)
        return write_slide(folder / name, pixels, mpp, fmt=fmt, **writer)

    return make


def zero_tile(path: Path, x: int, y: int) -> None:
    """Overwrite the JPEG bytes of the level-0 tile holding pixel (x, y) with zeros."""
    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        across = -(-page.imagewidth // page.tilewidth)
        index = (y // page.tilelength) * across + x // page.tilewidth
        offset, count = page.dataoffsets[index], page.databytecounts[index]
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(bytes(count))


@pytest.fixture(scope="session")
def openslide_fixtures(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The `tests/fixtures` folder of the openslide-python 1.4.7 sdist (downloaded once).

    Kept in pytest's cache folder across sessions (in a session temp folder without one).
    """
    if getattr(request.config, "cache", None) is not None:
        cache = Path(request.config.cache.mkdir("openslide-python-1.4.7-sdist"))
    else:
        cache = tmp_path_factory.mktemp("openslide-sdist")
    fixtures = cache / "openslide_python-1.4.7" / "tests" / "fixtures"
    if fixtures.is_dir():
        return fixtures
    archives = list(cache.glob("openslide_python-1.4.7.tar.gz"))
    if not archives:
        command = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps"]
        result = subprocess.run(
            [*command, SDIST, "-d", str(cache)], capture_output=True, text=True, timeout=300
        )
        unreachable = ("connection", "network", "resolve", "timed out", "temporary failure")
        if result.returncode != 0:
            if any(word in result.stderr.lower() for word in unreachable):
                pytest.skip(f"PyPI unreachable, cannot download {SDIST}: {result.stderr[-300:]}")
            raise RuntimeError(f"pip download {SDIST} failed: {result.stderr[-2000:]}")
        archives = list(cache.glob("openslide_python-1.4.7.tar.gz"))
    with tarfile.open(archives[0]) as archive:
        archive.extractall(cache, filter="data")
    return fixtures
