"""α-compositing weights of isotropic Gaussians in a pinhole view (torch, differentiable).

The weight w_{g,p} of Gaussian g at pixel p is what it contributes to the pixel's colour (or
feature) in front-to-back α-compositing, as 3-D Gaussian Splatting renders:
w = α_{g,p} · Π_{g' in front of g} (1 − α_{g',p}), with α_{g,p} = min(0.99, o_g · exp(−d²/2σ²)),
d the distance from the pixel centre to the projected mean and σ = f·s_g/z_g the screen-space
standard deviation of an isotropic Gaussian of scale s_g at depth z_g (the projection's Jacobian
at the mean, the EWA approximation for an isotropic splat). Choices, as 3DGS makes them:
footprints are truncated at `truncate` σ, contributions with α < 1/255 are dropped, Gaussians
behind `near` are culled, and a pixel stops compositing once its transmittance falls below
`min_transmittance`. Contributions are ordered by depth per pixel (ties by Gaussian index), so
the weights are a pure function of the scene. Pixel centres sit at integer + 0.5.

The weights are a torch graph of the means, scales and opacities (which pixels a Gaussian
touches and the depth order are chosen without gradient), so a caller can differentiate a
rendered image through them; the study itself only reads their values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

MAX_ALPHA = 0.99
MIN_ALPHA = 1.0 / 255.0


@dataclass(frozen=True)
class ViewWeights:
    """The nonzero weights of one view: Gaussian `g` [n] and pixel `p` [n] (row-major index),
    weight `w` [n] (a torch tensor, differentiable)."""

    g: np.ndarray
    p: np.ndarray
    w: torch.Tensor


def project(
    means: torch.Tensor, K: np.ndarray, Rt: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(u [G], v [G], depth [G]) of the means in the image of camera (K, Rt)."""
    R = torch.as_tensor(Rt[:, :3], dtype=means.dtype)
    t = torch.as_tensor(Rt[:, 3], dtype=means.dtype)
    cam = means @ R.T + t
    depth = cam[:, 2]
    safe = torch.where(depth > 0, depth, torch.ones_like(depth))
    u = K[0, 0] * cam[:, 0] / safe + K[0, 2]
    v = K[1, 1] * cam[:, 1] / safe + K[1, 2]
    return u, v, depth


def _footprints(
    u: np.ndarray, v: np.ndarray, radius: np.ndarray, height: int, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Gaussian, row, column) of every pixel in each listed Gaussian's square footprint
    that lies in the image, grouped by radius (Gaussians ascending within a group)."""
    gs, rows, cols = [], [], []
    for r in np.unique(radius):
        members = np.flatnonzero(radius == r)
        offsets = np.arange(-r, r + 1)
        dy, dx = np.meshgrid(offsets, offsets, indexing="ij")
        col = np.floor(u[members])[:, None] + dx.ravel()[None]
        row = np.floor(v[members])[:, None] + dy.ravel()[None]
        inside = (col >= 0) & (col < width) & (row >= 0) & (row < height)
        gs.append(np.broadcast_to(members[:, None], col.shape)[inside])
        rows.append(row[inside].astype(np.int64))
        cols.append(col[inside].astype(np.int64))
    if not gs:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    return np.concatenate(gs), np.concatenate(rows), np.concatenate(cols)


def view_weights(
    means: torch.Tensor,
    scales: torch.Tensor,
    opacity: torch.Tensor,
    K: np.ndarray,
    Rt: np.ndarray,
    height: int,
    width: int,
    *,
    truncate: float = 3.0,
    near: float = 0.1,
    min_transmittance: float = 1e-3,
) -> ViewWeights:
    """The compositing weights of every Gaussian at every pixel of one view (module docstring).

    `means` [G,3], `scales` [G], `opacity` [G] are float64 tensors (they may require grad).
    """
    u, v, depth = project(means, K, Rt)
    sigma = K[0, 0] * scales / torch.where(depth > 0, depth, torch.ones_like(depth))
    with torch.no_grad():
        un, vn, zn, sn = (x.numpy() for x in (u, v, depth, sigma))
        reach = truncate * sn
        visible = (
            (zn > near)
            & (un + reach >= 0)
            & (un - reach < width)
            & (vn + reach >= 0)
            & (vn - reach < height)
        )
        radius = np.zeros(len(un), dtype=np.int64)
        radius[visible] = np.ceil(reach[visible]).astype(np.int64)
        ids = np.flatnonzero(visible)
        g, row, col = _footprints(un[ids], vn[ids], radius[ids], height, width)
        g = ids[g]
    gt = torch.as_tensor(g)
    centre_x = torch.as_tensor(col + 0.5, dtype=means.dtype)
    centre_y = torch.as_tensor(row + 0.5, dtype=means.dtype)
    d2 = (centre_x - u[gt]) ** 2 + (centre_y - v[gt]) ** 2
    alpha = torch.clamp(opacity[gt] * torch.exp(-0.5 * d2 / sigma[gt] ** 2), max=MAX_ALPHA)
    with torch.no_grad():
        keep = (d2 <= (truncate * sigma[gt]) ** 2) & (alpha >= MIN_ALPHA)
    keep_np = keep.numpy()
    g, pixel, alpha = g[keep_np], (row * width + col)[keep_np], alpha[keep]
    order = np.lexsort((g, zn[g], pixel))
    g, pixel, alpha = g[order], pixel[order], alpha[order]
    return _composite(g, pixel, alpha, min_transmittance)


def _composite(
    g: np.ndarray, pixel: np.ndarray, alpha: torch.Tensor, min_transmittance: float
) -> ViewWeights:
    """Front-to-back compositing of contributions already sorted by (pixel, depth): each
    pixel's contributions go into one row of a padded [pixels, depth rank] array, whose
    exclusive cumulative product along the row is the transmittance in front of each."""
    if len(g) == 0:
        return ViewWeights(g=g, p=pixel, w=alpha)
    starts = np.r_[0, np.flatnonzero(np.diff(pixel)) + 1]
    counts = np.diff(np.r_[starts, len(pixel)])
    rank = np.arange(len(pixel)) - np.repeat(starts, counts)
    slot = torch.as_tensor(np.repeat(np.arange(len(starts)), counts))
    rank_t = torch.as_tensor(rank)
    padded = torch.ones(len(starts), int(counts.max()), dtype=alpha.dtype)
    padded = padded.index_put((slot, rank_t), 1.0 - alpha)
    transmitted = torch.cumprod(padded, dim=1)
    before = torch.cat([torch.ones_like(transmitted[:, :1]), transmitted[:, :-1]], dim=1)
    T = before[slot, rank_t]
    with torch.no_grad():
        keep = (T >= min_transmittance).numpy()
    return ViewWeights(g=g[keep], p=pixel[keep], w=(alpha * T)[torch.as_tensor(keep)])
