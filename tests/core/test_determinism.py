import numpy as np
import torch

from reprolab.core.determinism import derive_seed, seed_everything


def test_derived_seeds_are_stable_and_distinct():
    assert derive_seed(0, "ndfa", "bp", 1) == derive_seed(0, "ndfa", "bp", 1)
    seeds = {derive_seed(0, "ndfa", m, s) for m in ("bp", "dfa") for s in range(5)}
    assert len(seeds) == 10
    assert 0 <= derive_seed(3, "x") < 2**31


def test_seed_everything_repeats_draws_and_sets_threads():
    rng = seed_everything(7, threads=1)
    first = (rng.random(), np.random.rand(), torch.rand(1).item())
    rng = seed_everything(7, threads=1)
    assert first == (rng.random(), np.random.rand(), torch.rand(1).item())
    assert torch.get_num_threads() == 1
    assert torch.are_deterministic_algorithms_enabled()
