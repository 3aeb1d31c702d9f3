"""The tile check's pool handling: a broken pool is dropped once, and never a working one."""

from __future__ import annotations

import os
import signal
from concurrent.futures import wait

import numpy as np

from reprolab.preprocess.wsi import tile_check
from reprolab.preprocess.wsi.tile_check import TileChecker
from tests.preprocess.wsi.conftest import tissue_image

ARGS = (20.0, 40.0, True)  # white saturation (0-255), black threshold, drop blank and black


def grid(step: int, repeat: int) -> np.ndarray:
    """Level-0 coordinates every `step` px over a 1024 px slide, `repeat` times over."""
    coords = [(x, y) for y in range(0, 1024, step) for x in range(0, 1024, step)]
    return np.array(coords * repeat, dtype=np.int64)


def keep(checks: list[tile_check.TileCheck]) -> np.ndarray:
    return np.concatenate([check.keep for check in checks])


def test_a_loss_on_a_replaced_pool_leaves_the_working_pool_alone(make_slide):
    """The race of the old `restart`: slide A's work sits on pool P when P's workers die; B is
    refused by P (now known broken); C goes to the fresh pool P2. Collecting A must not drop
    P2, which holds C's work; A and B rerun, and all three give the undisturbed checks."""
    path = make_slide("a.svs", tissue_image(1024))
    coords, long_coords = grid(64, 1), grid(64, 16)
    inline = TileChecker(1)
    expected = keep(inline.collect(inline.submit(path, coords, 0, 64, ARGS)))
    expected_long = np.tile(expected, 16)
    assert 0 < expected.sum() < len(expected)  # some tiles are kept, some dropped

    checker = TileChecker(2)
    checker.start()
    broken = tile_check._pool(2)
    broken.submit(int, 0).result()
    a = checker.submit(path, long_coords, 0, 64, ARGS)  # 16 chunks of 256 tiles: still running
    for process in list(broken._processes.values()):
        os.kill(process.pid, signal.SIGKILL)
    wait(a.futures, timeout=60)  # the pool now knows it is broken
    assert all(future.exception() is not None for future in a.futures[-4:])
    b = checker.submit(path, coords, 0, 64, ARGS)
    assert b.futures is None and 2 not in tile_check._POOLS  # refused, and P dropped at once
    c = checker.submit(path, coords, 0, 64, ARGS)
    working = tile_check._POOLS[2]
    assert c.executor is working is not broken

    np.testing.assert_array_equal(keep(checker.collect(a)), expected_long)
    assert tile_check._POOLS[2] is working  # A's loss did not drop the pool holding C's work
    np.testing.assert_array_equal(keep(checker.collect(b)), expected)
    np.testing.assert_array_equal(keep(checker.collect(c)), expected)
    assert tile_check._POOLS[2] is working
