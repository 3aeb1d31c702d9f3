"""Seeding and deterministic execution for every job.

A job's seed is derived from (global seed, study, method, seed index) by hashing, so two jobs never
share a random stream by accident and the same job always gets the same one. Torch is put in
deterministic mode with a fixed thread count, because the number of threads changes the order of
floating-point sums and therefore the last bits of every result.

The CPU kernel level is the third thing that changes sums: torch picks its vectorised kernels
(ATen) and MKL its BLAS code path by the processor's instruction set, so an AVX-512 machine and an
AVX2 one give different bits from the same job. `kernel_environment` turns params.yaml's
`cpu_kernels` into the environment variables that pin both (and oneDNN's), which the workflow sets
for every job before any library loads; `check_kernel_level` refuses a job whose torch did not
take the pinned level (a CPU without it), since its bytes would silently differ.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch


def derive_seed(global_seed: int, *parts: object) -> int:
    """Return a 31-bit seed that is a pure function of the global seed and the named parts."""
    text = "/".join([str(global_seed), *map(str, parts)])
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def seed_everything(seed: int, threads: int) -> np.random.Generator:
    """Seed python, numpy and torch, make torch deterministic on `threads` threads.

    Returns a numpy Generator seeded with `seed` so callers do not reach for the global state.
    CUBLAS_WORKSPACE_CONFIG is set for deterministic cuBLAS when a GPU is used at paper scale.
    """
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    use_deterministic_kernels()
    check_kernel_level()
    return np.random.default_rng(seed)


def use_deterministic_kernels() -> None:
    """Make torch's eager kernels deterministic (an op without a deterministic kernel raises).

    The effect of `torch.use_deterministic_algorithms(True)` without its import of the TorchInductor
    configuration, which costs ~1.5 s in every job (a sixth of a ci-scale job): the project never
    compiles models, so only the eager flag matters. Should the configuration be loaded already
    (something compiled), its flag is set too, as the public function would.
    """
    import torch

    torch._C._set_deterministic_algorithms(True, warn_only=False)
    inductor = sys.modules.get("torch._inductor.config")
    if inductor is not None:
        inductor.deterministic = True


KERNEL_VARIABLES = {
    "torch": "ATEN_CPU_CAPABILITY",
    "mkl": "MKL_CBWR",
    "onednn": "ONEDNN_MAX_CPU_ISA",
}
"""The environment variable that pins each library's CPU kernel level (params `cpu_kernels`)."""


def kernel_environment(levels: Mapping[str, str]) -> dict[str, str]:
    """Environment variables pinning the CPU kernel level of each library in `levels`.

    `native` leaves a library to choose by the processor (the paper scale on GPUs does), so its
    variable is not set; any other value is passed through (torch lower-cases, MKL and oneDNN
    upper-case their names, e.g. `avx2`, `AVX2`).
    """
    return {
        KERNEL_VARIABLES[library]: level for library, level in levels.items() if level != "native"
    }


def check_kernel_level() -> None:
    """Fail when ATEN_CPU_CAPABILITY pins a level torch did not take (the CPU lacks it)."""
    import torch

    wanted = os.environ.get(KERNEL_VARIABLES["torch"])
    if not wanted:
        return
    taken = torch.backends.cpu.get_cpu_capability()
    if taken.lower() != wanted.lower():
        raise RuntimeError(
            f"{KERNEL_VARIABLES['torch']}={wanted} but torch runs its {taken} kernels: this CPU "
            "lacks the pinned level, so results would not match other machines; set "
            "params.yaml's cpu_kernels.torch to a level it has (or 'native')"
        )


def resolve_device(name: str) -> torch.device:
    """The torch device a params value names: ``auto`` → CUDA when present, else CPU."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)
