"""The dot-product statistics: ρ̄ is the weighted mean pairwise correlation, quantisation SNR is
flat in d for uncorrelated products and rises with d for positively correlated ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.core.determinism import seed_everything
from reprolab.studies.ngpt_fp4.mechanism import dot_stats, layer_stats, mean_correlation
from reprolab.studies.ngpt_fp4.models import CharLM, LMConfig
from reprolab.studies.ngpt_fp4.nvfp4 import quantize, recipe_named

pytestmark = pytest.mark.usefixtures("torch_one_thread")
WIDTHS = (32, 64, 128, 256)


def planted(d: int, strength: float, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    """4096 pairs whose products share a per-pair factor (strength² · g² · ±1): mean zero,
    positively correlated across coordinates when strength > 0."""
    common = torch.randn(4096, 1, generator=generator)
    sign = torch.randint(0, 2, (4096, 1), generator=generator) * 2 - 1
    x = torch.randn(4096, d, generator=generator) + strength * common
    w = torch.randn(4096, d, generator=generator) + strength * common * sign
    return x, w


def snr_slope(strength: float) -> tuple[float, list]:
    generator = torch.Generator().manual_seed(0)
    stats = []
    for d in WIDTHS:
        x, w = planted(d, strength, generator)
        stats.append(dot_stats(x, w, quantize(x, 1), quantize(w, 1)))
    slope = np.polyfit(np.log2(WIDTHS), [s.snr_db for s in stats], 1)[0]
    return float(slope), stats


def test_mean_correlation_is_the_variance_weighted_mean_of_pairwise_correlations():
    generator = torch.Generator().manual_seed(1)
    terms = torch.randn(2000, 5, generator=generator) * torch.tensor([1.0, 2, 3, 0.5, 1])
    terms[:, 1] += terms[:, 0]
    corr = np.corrcoef(terms.numpy().T)
    std = terms.double().std(dim=0).numpy()
    weights = np.outer(std, std)
    off = ~np.eye(5, dtype=bool)
    expected = (corr * weights)[off].sum() / weights[off].sum()
    assert mean_correlation(terms) == pytest.approx(expected, rel=1e-9)


def test_uncorrelated_products_keep_a_flat_snr_near_17_5_db():
    slope, stats = snr_slope(0.0)
    assert abs(slope) < 0.3
    for s in stats:
        assert abs(s.rho) < 0.01 and abs(s.rho_noise) < 0.01 and 16.5 < s.snr_db < 18.5


def test_positively_correlated_products_gain_snr_with_width():
    slope, stats = snr_slope(0.6)
    assert 1.5 < slope < 3.5
    assert all(s.rho > 0.15 and abs(s.rho_noise) < 0.01 for s in stats)


def test_every_block_linear_layer_of_a_model_is_measured():
    seed_everything(0, 1)
    model = CharLM(LMConfig(vocab=11, hidden=32, layers=2, heads=2, context=16, normalized=True))
    tokens = torch.randint(0, 11, (2, 16), generator=torch.Generator().manual_seed(0))
    stats = layer_stats(
        model, tokens, recipe_named("nvfp4", 16.0), 256, torch.Generator().manual_seed(1)
    )
    assert len(stats) == 8 and all(np.isfinite(s.snr_db) for s in stats.values())
