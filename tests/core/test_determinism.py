import numpy as np
import pytest
import torch

from reprolab.core.determinism import (
    check_kernel_level,
    derive_seed,
    kernel_environment,
    seed_everything,
)


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


def test_kernel_environment_pins_each_library_and_leaves_native_alone():
    assert kernel_environment({"torch": "avx2", "mkl": "AVX2", "onednn": "native"}) == {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "AVX2",
    }


def test_a_pinned_level_the_cpu_lacks_is_refused(monkeypatch):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    with pytest.raises(RuntimeError, match="ATEN_CPU_CAPABILITY=avx2 but torch runs its DEFAULT"):
        check_kernel_level()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    check_kernel_level()
