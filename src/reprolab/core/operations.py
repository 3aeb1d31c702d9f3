"""The arithmetic work of code run under torch, counted exactly: the overhead measure of the
studies whose claims are about cost (hiccr's credit assignment, nas's anchor scaling).

Wall-clock time changes from one run and machine to the next, and a study's outputs must be
byte-identical, so an overhead claim is checked on counted work instead (the wall-clock ratios
are in `benchmarks/`, alternated on the same inputs in one process). `count_operations` runs a
function under a dispatch mode that adds, for every ATen operator it executes (forward and
backward), its floating-point operations where torch's flop counter knows the operator (matrix
products, attention, convolutions: 2 per multiply-add) and otherwise one per output element
(element-wise arithmetic, reductions, copies). The count depends only on the operators and
shapes, never on timing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry


class _Counter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.operations = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = func._overloadpacket
        if packet in flop_registry:
            self.operations += int(flop_registry[packet](*args, **kwargs, out_val=out))
        else:
            leaves = tree_leaves(out)
            self.operations += sum(t.numel() for t in leaves if isinstance(t, torch.Tensor))
        return out


def count_operations(function: Callable[[], Any]) -> tuple[int, Any]:
    """The operations `function()` executes (module docstring) and what it returns."""
    counter = _Counter()
    with counter:
        result = function()
    return counter.operations, result
