import subprocess
import sys

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


@pytest.mark.parametrize("compiled_before", [False, True])
def test_deterministic_kernels_without_loading_the_compiler(compiled_before):
    """A fresh interpreter: the eager flag is on (not warn-only), TorchInductor's configuration
    is left unloaded, and where it was loaded already its flag is set too."""
    preload = "import torch._inductor.config; " if compiled_before else ""
    script = (
        f"import sys, torch; {preload}"
        "from reprolab.core.determinism import use_deterministic_kernels; "
        "use_deterministic_kernels(); "
        "assert torch.are_deterministic_algorithms_enabled(); "
        "assert not torch.is_deterministic_algorithms_warn_only_enabled(); "
        "inductor = sys.modules.get('torch._inductor.config'); "
        f"assert (inductor is not None) == {compiled_before}; "
        "assert inductor is None or inductor.deterministic"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
