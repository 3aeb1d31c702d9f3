"""ntm's sample-quality metrics: SWD₂ on identical, translated and swapped sets; unbiased
RBF MMD² near 0 within a distribution, large across, the same chunked or not; mode coverage and
shares on planted samples; the checkerboard support share."""

from __future__ import annotations

import math

import pytest
import torch

from reprolab.studies.ntm.data import checkerboard, eight_gaussian_modes, eight_gaussians
from reprolab.studies.ntm.metrics import (
    mmd_rbf,
    mode_coverage,
    mode_shares,
    near_mode_share,
    projection_bank,
    sliced_wasserstein,
    support_share,
)


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_projection_bank_is_fixed_unit_directions():
    bank = projection_bank(3, 256, seed=1)
    assert bank.shape == (256, 3) and bank.dtype == torch.float64
    assert torch.allclose(bank.norm(dim=1), torch.ones(256, dtype=torch.float64))
    assert torch.equal(bank, projection_bank(3, 256, seed=1))
    assert not torch.equal(bank, projection_bank(3, 256, seed=2))


def test_swd_is_zero_for_identical_sets_and_symmetric():
    x, y = eight_gaussians(2000, gen(1)), checkerboard(2000, gen(2))
    bank = projection_bank(2, 64)
    assert sliced_wasserstein(x, x[torch.randperm(2000, generator=gen())], bank) == 0.0
    assert sliced_wasserstein(x, y, bank) == sliced_wasserstein(y, x, bank) > 0.5


def test_swd_of_a_translation_is_the_projected_shift():
    x = torch.randn((1000, 1), generator=gen())
    bank = projection_bank(1, 16)
    assert sliced_wasserstein(x, x + 0.7, bank) == pytest.approx(0.7, rel=1e-6)
    points = torch.randn((1000, 2), generator=gen(), dtype=torch.float64)
    shift = torch.tensor([3.0, -4.0], dtype=torch.float64)
    bank = projection_bank(2, 256)
    expected = (bank @ shift).square().mean().sqrt().item()
    assert sliced_wasserstein(points, points + shift, bank) == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(5.0 / math.sqrt(2), rel=0.1)  # uniform directions
    with pytest.raises(ValueError, match="same shape"):
        sliced_wasserstein(points, points[:10], bank)


def test_mmd_is_near_zero_within_a_distribution_and_large_across():
    x, y = eight_gaussians(1000, gen(1)), eight_gaussians(1000, gen(2))
    bandwidths = [0.2, 1.0]
    same = mmd_rbf(x, y, bandwidths)
    shifted = mmd_rbf(x, y + torch.tensor([1.0, 0.0]), bandwidths)
    assert abs(same) < 3e-3 and shifted > 0.1
    assert mmd_rbf(x, checkerboard(1000, gen(3)), bandwidths) > 0.05


def test_mmd_is_the_same_chunked_or_not_and_unbiased():
    x, y = torch.randn((37, 3), generator=gen(1)), torch.randn((23, 3), generator=gen(2)) + 0.5
    whole = mmd_rbf(x, y, [0.5, 2.0], chunk=100)
    assert mmd_rbf(x, y, [0.5, 2.0], chunk=7) == pytest.approx(whole, rel=1e-12)
    a, b = x.double(), y.double()

    def k(u, v):
        d = torch.cdist(u, v).square()
        return (-d / (2 * 0.25)).exp() + (-d / (2 * 4.0)).exp()

    kxx, kyy = k(a, a), k(b, b)
    expected = (
        (kxx.sum() - kxx.trace()) / (37 * 36)
        + (kyy.sum() - kyy.trace()) / (23 * 22)
        - 2 * k(a, b).mean()
    )
    assert whole == pytest.approx(expected.item(), rel=1e-9)


def test_mode_coverage_counts_populated_modes():
    modes = eight_gaussian_modes(4.0)
    planted = modes[torch.tensor([0, 3, 5])].repeat_interleave(100, dim=0)
    planted = planted + 0.1 * torch.randn(planted.shape, generator=gen())
    assert mode_coverage(planted, modes, radius=0.6) == 3 / 8
    assert near_mode_share(planted, modes, radius=0.6) == pytest.approx(1.0)
    full = eight_gaussians(8000, gen())
    assert mode_coverage(full, modes, radius=0.6) == 1.0


def test_mode_shares_respect_the_radius_and_the_minimum_share():
    modes = eight_gaussian_modes(4.0)
    far = torch.zeros((50, 2))  # at the centre, 4 away from every mode
    lone = modes[1:2].repeat(20, 1)  # 2 % of 1000 samples exactly
    rest = modes[0:1].repeat(930, 1)
    x = torch.cat([far, lone, rest])
    shares = mode_shares(x, modes, radius=0.5)
    assert shares[0].item() == pytest.approx(0.93) and shares[1].item() == pytest.approx(0.02)
    assert near_mode_share(x, modes, 0.5) == pytest.approx(0.95)
    assert mode_coverage(x, modes, 0.5) == 2 / 8
    assert mode_coverage(x, modes, 0.5, min_share=0.05) == 1 / 8


def test_support_share_of_the_checkerboard():
    assert support_share(checkerboard(5000, gen())) == 1.0
    uniform = torch.rand((20_000, 2), generator=gen()) * 8 - 4
    assert support_share(uniform) == pytest.approx(0.5, abs=0.02)
    assert support_share(torch.tensor([[5.0, 5.0], [-3.0, -3.0]])) == 0.5
