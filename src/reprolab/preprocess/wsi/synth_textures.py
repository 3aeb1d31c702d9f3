"""Procedural H&E textures for synthetic slides, rendered block by block.

Colour follows the Beer-Lambert model that stain separation assumes: each pixel holds the
concentrations of three stains (haematoxylin `H`, eosin `E` and a red for erythrocytes `R`) and
its optical density is their mix of stain vectors (Ruifrok & Johnston's H and E), so RGB is
`255 * exp(-OD)`. A texture is a ground substance (base concentrations, optionally modulated by
a fibre pattern and a fine grain) plus layers of nuclei. Nuclei are a Poisson point process:
their centres are splatted as impulses, blurred by a (possibly elongated) Gaussian and soft
thresholded, so a nucleus's size follows its amplitude and crowded nuclei merge as they do in
tissue. All sizes are in µm and converted with the slide's mpp.

Patterns that must not show seams between blocks (fibres, grain) come from periodic atlases of
`ATLAS_PERIOD` px, made once per process by FFT filtering of seeded white noise and cached, and
read at slide coordinates plus a per-slide offset. Nucleus centres are drawn for the whole slide
before rendering, so blocks that share a margin see the same nuclei.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import cv2
import numpy as np

ATLAS_PERIOD = 1024
ATLAS_SEED = 20260
HALF_RES_SIGMA = 4.0
MAX_STAMPS = 400  # a layer with fewer points in a window is stamped, not filtered
STAIN_VECTORS = np.array(
    [[0.650, 0.704, 0.286], [0.072, 0.990, 0.105], [0.150, 0.800, 0.580]], dtype=np.float64
)
STAIN_VECTORS /= np.linalg.norm(STAIN_VECTORS, axis=1, keepdims=True)


@dataclass(frozen=True)
class NucleiLayer:
    """One kind of nucleus (or red cell, or debris) scattered over a texture.

    `density` is per 1000 µm² of the texture; `sigma_um` the Gaussian's (along, across) widths;
    `angle` the long axis in degrees (None: round); `amplitude` the range of peak heights in
    units of the threshold (2 gives a nucleus of radius 1.18 sigma, 6 one of 1.9 sigma);
    `stain` the (H, E, R) concentrations inside it; `chromatin` how strongly the grain named by
    `grain` mottles it; `ring` how much paler its centre is (biconcave red cells); `nucleoli`
    the H+E of a small dot at its centre; `jitter`, when set, places nuclei on a square grid
    of the density's spacing, each moved by up to `jitter` spacings (packed sheets of cells
    rather than Poisson clumps); `power` 4 instead of 2 gives a flat-topped profile
    `exp(-(r/sigma)^4 / 2)` whose short tails keep packed nuclei apart.
    """

    density: float
    sigma_um: tuple[float, float]
    amplitude: tuple[float, float]
    stain: tuple[float, float, float]
    angle: float | None = None
    chromatin: float = 0.0
    grain: str = "grain_fine"
    ring: float = 0.0
    nucleoli: float = 0.0
    jitter: float | None = None
    power: int = 2


@dataclass(frozen=True)
class Texture:
    """A tissue texture: ground substance (H, E, R), its fibre pattern and grain, and nuclei."""

    name: str
    base: tuple[float, float, float]
    layers: tuple[NucleiLayer, ...]
    fibre: str | None = None
    fibre_strength: float = 0.0
    grain: str = "grain_fine"
    grain_strength: float = 0.1


def _spindle(density: float, angle: float) -> NucleiLayer:
    """Elongated fibroblast nuclei along the fibres of a stroma."""
    return NucleiLayer(density, (4.0, 1.1), (2.0, 3.2), (0.85, 0.1, 0.0), angle, 0.2)


# The texture table: code order is fixed (0 is background, the last is the lesion).
TEXTURES: tuple[Texture, ...] = (
    Texture("normal", (0.10, 0.42, 0.0),
            (NucleiLayer(5.0, (2.2, 2.2), (2.2, 3.6), (0.95, 0.05, 0.0), None, 0.35, jitter=0.45),),
            fibre="mesh", fibre_strength=0.35, grain_strength=0.12),
    Texture("stroma_dense", (0.04, 0.78, 0.0), (_spindle(0.9, 20.0),),
            fibre="fibre_dense", fibre_strength=0.35),
    Texture("stroma_loose", (0.03, 0.42, 0.0), (_spindle(0.5, 80.0),),
            fibre="fibre_loose", fibre_strength=0.95),
    Texture("stroma_wavy", (0.05, 0.60, 0.0), (_spindle(0.7, -50.0),),
            fibre="fibre_wavy", fibre_strength=0.7),
    Texture("necrosis", (0.06, 0.36, 0.0),
            (NucleiLayer(14.0, (0.5, 0.5), (1.5, 3.5), (1.0, 0.1, 0.0)),
             NucleiLayer(3.0, (2.2, 2.2), (1.5, 2.6), (0.16, 0.12, 0.0), None, 0.6)),
            grain="grain_coarse", grain_strength=0.45),
    Texture("blood", (0.02, 0.22, 0.05),
            (NucleiLayer(18.0, (1.6, 1.6), (2.2, 2.9), (0.0, 0.2, 0.9), None, 0.1, ring=0.45,
                         jitter=0.35),
             NucleiLayer(0.3, (2.0, 2.0), (2.5, 3.5), (1.0, 0.1, 0.0), None, 0.3)),
            grain_strength=0.15),
    Texture("lymphoid", (0.15, 0.40, 0.0),
            (NucleiLayer(27.0, (1.5, 1.5), (2.6, 3.4), (1.2, 0.04, 0.0), None, 0.2, jitter=0.3),),
            grain_strength=0.1),
    Texture("lesion", (0.16, 0.42, 0.0),
            (NucleiLayer(7.0, (3.8, 3.8), (1.5, 4.0), (1.1, 0.08, 0.0), None, 0.55,
                         "grain_coarse", nucleoli=0.9, jitter=0.3, power=4),),
            grain_strength=0.12),
)  # fmt: skip


# ---------------------------------------------------------------------------------- atlases


def _periodic_noise(
    rng: np.random.Generator, sigma_along: float, sigma_across: float, angle: float
) -> np.ndarray:
    """White noise filtered by an (elongated) Gaussian with FFT, so it tiles; mean 0, std 1."""
    size = ATLAS_PERIOD
    noise = rng.standard_normal((size, size))
    ky = np.fft.fftfreq(size)[:, None] * 2 * math.pi
    kx = np.fft.rfftfreq(size)[None, :] * 2 * math.pi
    theta = math.radians(angle)
    k_along = kx * math.cos(theta) + ky * math.sin(theta)
    k_across = -kx * math.sin(theta) + ky * math.cos(theta)
    gain = np.exp(-0.5 * ((k_along * sigma_along) ** 2 + (k_across * sigma_across) ** 2))
    field = np.fft.irfft2(np.fft.rfft2(noise) * gain, s=(size, size))
    return ((field - field.mean()) / field.std()).astype(np.float32)


def _fibres(
    rng: np.random.Generator,
    px_um: float,
    along: float,
    across: float,
    angle: float,
    warp_um: float,
    sparsity: float,
) -> np.ndarray:
    """Thin fibre bundles: ridges of elongated noise, optionally warped into waves; std 1."""
    field = _periodic_noise(rng, along * px_um, across * px_um, angle)
    if warp_um > 0:
        shift_x = _periodic_noise(rng, 25 * px_um, 25 * px_um, 0.0) * warp_um * px_um
        shift_y = _periodic_noise(rng, 25 * px_um, 25 * px_um, 0.0) * warp_um * px_um
        grid_y, grid_x = np.mgrid[0:ATLAS_PERIOD, 0:ATLAS_PERIOD].astype(np.float32)
        field = cv2.remap(
            field, grid_x + shift_x, grid_y + shift_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP
        )
    ridges = np.exp(-0.5 * (field / 0.45) ** 2) - sparsity * np.clip(-field, 0, None)
    return ((ridges - ridges.mean()) / ridges.std()).astype(np.float32)


@functools.lru_cache(maxsize=4)
def atlases(mpp: float) -> dict[str, np.ndarray]:
    """The periodic pattern bank at `mpp`, each padded by one period so any block is a slice."""
    px_um = 1.0 / mpp
    rng = np.random.default_rng(ATLAS_SEED)
    bank = {
        "grain_fine": _periodic_noise(rng, 0.5 * px_um, 0.5 * px_um, 0.0),
        "grain_coarse": _periodic_noise(rng, 1.4 * px_um, 1.4 * px_um, 0.0),
        "mesh": _fibres(rng, px_um, 2.5, 2.5, 0.0, 0.0, 0.0),
        "fibre_dense": _fibres(rng, px_um, 14.0, 0.9, 20.0, 0.0, 0.0),
        "fibre_loose": _fibres(rng, px_um, 9.0, 1.2, 80.0, 3.0, 0.8),
        "fibre_wavy": _fibres(rng, px_um, 12.0, 1.0, -50.0, 6.0, 0.2),
        "shade": _periodic_noise(rng, 60 * px_um, 60 * px_um, 0.0),
    }
    return {
        name: np.pad(atlas, ((0, ATLAS_PERIOD), (0, ATLAS_PERIOD)), mode="wrap")
        for name, atlas in bank.items()
    }


def atlas_window(atlas: np.ndarray, x0: int, y0: int, width: int, height: int) -> np.ndarray:
    """The atlas over the level-0 window at (x0, y0) (coordinates already offset per slide)."""
    if width > ATLAS_PERIOD or height > ATLAS_PERIOD:
        raise ValueError(f"atlas window {width}x{height} exceeds the period {ATLAS_PERIOD}")
    sx, sy = x0 % ATLAS_PERIOD, y0 % ATLAS_PERIOD
    return atlas[sy : sy + height, sx : sx + width]


# ------------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class Points:
    """Centres (level-0 px) and amplitudes of one nuclei layer over a slide, sorted by y."""

    x: np.ndarray
    y: np.ndarray
    amplitude: np.ndarray

    def window(self, x0: int, y0: int, width: int, height: int) -> Points:
        """The points inside the window, with coordinates relative to its corner."""
        lo, hi = np.searchsorted(self.y, [y0, y0 + height])
        x, y, amp = self.x[lo:hi], self.y[lo:hi], self.amplitude[lo:hi]
        keep = (x >= x0) & (x < x0 + width)
        return Points(x[keep] - x0, y[keep] - y0, amp[keep])


@functools.lru_cache(maxsize=64)
def _kernel(sigma_along: float, sigma_across: float, angle: float, power: int) -> np.ndarray:
    """An elongated kernel `exp(-d^power / 2)` rotated to `angle`, peak 1."""
    radius = int(math.ceil((3 if power == 2 else 2) * sigma_along))
    yy, xx = np.mgrid[-radius : radius + 1, -radius : radius + 1].astype(np.float64)
    theta = math.radians(angle)
    along = xx * math.cos(theta) + yy * math.sin(theta)
    across = -xx * math.sin(theta) + yy * math.cos(theta)
    squared = (along / sigma_along) ** 2 + (across / sigma_across) ** 2
    return np.exp(-0.5 * squared ** (power / 2)).astype(np.float32)


def _blur_peak(
    impulses: np.ndarray,
    sigma_along: float,
    sigma_across: float,
    angle: float | None,
    power: int = 2,
) -> np.ndarray:
    """Blur impulses by a kernel whose peak is 1, so an impulse of height a peaks at a."""
    if angle is None and power == 2:
        blurred = cv2.GaussianBlur(impulses, (0, 0), sigma_along, borderType=cv2.BORDER_CONSTANT)
        return blurred * np.float32(2 * math.pi * sigma_along * sigma_along)
    kernel = _kernel(sigma_along, sigma_across, angle or 0.0, power)
    return cv2.filter2D(impulses, -1, kernel, borderType=cv2.BORDER_CONSTANT)


def _soft_threshold(field: np.ndarray, level: float) -> np.ndarray:
    """0 below `level`, 1 above 1.3 * level, linear between: crisp but anti-aliased edges."""
    return np.clip((field - level) * np.float32(1.0 / (0.3 * level)), 0.0, 1.0)


def _impulses(points: Points, shape: tuple[int, int], step: int) -> np.ndarray:
    """Point amplitudes summed into pixels of `step` window px each."""
    height, width = shape
    ix = np.clip((points.x // step).astype(np.int64), 0, width - 1)
    iy = np.clip((points.y // step).astype(np.int64), 0, height - 1)
    impulses = np.bincount(iy * width + ix, weights=points.amplitude, minlength=height * width)
    return impulses.reshape(shape).astype(np.float32)


def _stamp(points: Points, shape: tuple[int, int], kernel: np.ndarray) -> np.ndarray:
    """Sum of `kernel` copies scaled by each point's amplitude (cheaper than a wide filter when
    points are few); equal to filtering the impulse image with it."""
    field = np.zeros(shape, dtype=np.float32)
    radius = kernel.shape[0] // 2
    height, width = shape
    xs, ys = points.x.astype(np.int64), points.y.astype(np.int64)
    for x, y, amp in zip(xs, ys, points.amplitude, strict=True):
        top, left = y - radius, x - radius
        y0, x0 = max(top, 0), max(left, 0)
        y1, x1 = min(top + kernel.shape[0], height), min(left + kernel.shape[1], width)
        if y0 < y1 and x0 < x1:
            field[y0:y1, x0:x1] += amp * kernel[y0 - top : y1 - top, x0 - left : x1 - left]
    return field


def render_layer(
    layer: NucleiLayer, points: Points, shape: tuple[int, int], px_um: float, grain: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Coverage (0..1) of one nuclei layer in a window, mottled by `grain`, and its nucleoli.

    Wide kernels (both widths >= `HALF_RES_SIGMA` px) are applied at half resolution and the
    blurred field upsampled before thresholding, which keeps edges sharp at a quarter of the cost.
    """
    height, width = shape
    along, across = (s * px_um for s in layer.sigma_um)
    if min(along, across) >= HALF_RES_SIGMA:
        small = _impulses(points, ((height + 1) // 2, (width + 1) // 2), 2)
        field = _blur_peak(small, along / 2, across / 2, layer.angle, layer.power)
        size = (field.shape[1] * 2, field.shape[0] * 2)
        field = cv2.resize(field, size, interpolation=cv2.INTER_LINEAR)[:height, :width]
    elif layer.angle is not None and points.x.size <= MAX_STAMPS:
        field = _stamp(points, shape, _kernel(along, across, layer.angle, layer.power))
    else:
        field = _blur_peak(_impulses(points, shape, 1), along, across, layer.angle, layer.power)
    cover = _soft_threshold(field, 1.0)
    if layer.ring > 0:
        cover *= 1.0 - np.float32(layer.ring) * _soft_threshold(field, 2.0)
    if layer.chromatin > 0:
        cover *= 1.0 + np.float32(layer.chromatin) * np.clip(grain, -1.5, 1.5)
    nucleoli = None
    if layer.nucleoli > 0:
        dots = (_impulses(points, shape, 1) > 0).astype(np.float32)
        nucleoli = _soft_threshold(_blur_peak(dots, 0.45 * px_um, 0.45 * px_um, None), 0.5)
    return cover, nucleoli


def render_texture(
    texture: Texture,
    gain: np.ndarray,
    layer_points: list[Points],
    windows: dict[str, np.ndarray],
    px_um: float,
) -> np.ndarray:
    """The (3, h, w) stain concentrations of `texture` over a window.

    `gain` scales (H, E, R) per slide (stain variation); `layer_points` holds each layer's points
    relative to the window; `windows` the atlas patterns over it.
    """
    height, width = windows["grain_fine"].shape
    base = np.asarray(texture.base, dtype=np.float32) * gain
    ground = 1.0 + np.float32(texture.grain_strength) * windows[texture.grain]
    if texture.fibre is not None:
        ground = ground + np.float32(texture.fibre_strength) * windows[texture.fibre]
    ground = np.clip(ground, 0.03, None)
    conc = np.empty((3, height, width), dtype=np.float32)
    for channel in range(3):
        conc[channel] = base[channel] * ground
    for layer, points in zip(texture.layers, layer_points, strict=True):
        cover, nucleoli = render_layer(layer, points, (height, width), px_um, windows[layer.grain])
        stain = np.asarray(layer.stain, dtype=np.float32) * gain
        keep = 1.0 - np.clip(cover, 0.0, 1.0) * np.float32(0.7)
        for channel in range(3):
            conc[channel] = conc[channel] * keep + stain[channel] * cover
        if nucleoli is not None:
            conc[0] += np.float32(layer.nucleoli * 0.6 * gain[0]) * nucleoli
            conc[1] += np.float32(layer.nucleoli * 0.5 * gain[1]) * nucleoli
    return conc


def density_to_rgb(density: np.ndarray, out: np.ndarray) -> None:
    """Write `255 * exp(-density)` of a (3, h, w) optical density into the (h, w, 3) uint8 `out`."""
    pixels = cv2.merge([np.negative(channel) for channel in density])
    cv2.exp(pixels, pixels)
    out[:] = cv2.convertScaleAbs(pixels, alpha=255.0)
