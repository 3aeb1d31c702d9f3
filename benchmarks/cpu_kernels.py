"""What pinning the CPU kernel level costs.

Runs the same torch workloads in child processes, once with the libraries choosing their kernels
by the CPU (`native`) and once pinned as the workflow pins every `ci`/`smoke` job (params.yaml
`cpu_kernels`, through `kernel_environment`), alternating the two so that machine noise hits
both, and prints each median with the ratio pinned/native. The workloads stand for the studies'
jobs: an MLP trained with Adam (ndfa, icl_manifold), a small transformer encoder's forward and
backward (vngct, visual_queries) and a batched matrix product (MKL's BLAS).

    python benchmarks/cpu_kernels.py [--repeat 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from reprolab.core.determinism import KERNEL_VARIABLES, kernel_environment
from reprolab.core.params import load_yaml, merged_top_level

WORKLOADS = {
    "mlp_adam": """
import torch
torch.manual_seed(0)
blocks = [(torch.nn.Linear(256, 256), torch.nn.Tanh()) for _ in range(4)]
net = torch.nn.Sequential(*[module for block in blocks for module in block])
opt = torch.optim.Adam(net.parameters(), 1e-3)
x, y = torch.randn(512, 256), torch.randn(512, 256)
for _ in range(200):
    opt.zero_grad(); torch.nn.functional.mse_loss(net(x), y).backward(); opt.step()
""",
    "transformer": """
import torch
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
net = torch.nn.TransformerEncoder(layer, 2)
x = torch.randn(32, 64, 128)
for _ in range(20):
    net(x).square().mean().backward()
""",
    "matmul": """
import torch
torch.manual_seed(0)
a, b = torch.randn(64, 256, 256), torch.randn(64, 256, 256)
for _ in range(50):
    torch.bmm(a, b)
""",
}


def seconds(code: str, env: dict[str, str], threads: int) -> float:
    """Wall time of one child process running `code` on `threads` torch threads."""
    program = f"import torch; torch.set_num_threads({threads})\n{code}"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", program], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    pinned_levels = merged_top_level({**load_yaml("params.yaml"), "scale": "smoke"})["cpu_kernels"]
    native = {k: v for k, v in os.environ.items() if k not in KERNEL_VARIABLES.values()}
    pinned = {**native, **kernel_environment(pinned_levels)}
    print(f"pinned: {kernel_environment(pinned_levels)}; {args.repeat} runs each, alternating")
    for name, code in WORKLOADS.items():
        times: dict[str, list[float]] = {"native": [], "pinned": []}
        for _ in range(args.repeat):
            times["native"].append(seconds(code, native, args.threads))
            times["pinned"].append(seconds(code, pinned, args.threads))
        native_s, pinned_s = (statistics.median(times[k]) for k in ("native", "pinned"))
        print(
            f"{name:12s} native {native_s:6.2f} s  pinned {pinned_s:6.2f} s  "
            f"pinned/native {pinned_s / native_s:.2f}"
        )


if __name__ == "__main__":
    main()
