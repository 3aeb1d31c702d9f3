"""The CIFAR pickle reader: loads the real files' format, refuses pickles that would run code."""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import warnings

import numpy as np
import pytest

from reprolab.studies.ndfa.formats import load_cifar


def _string(value: bytes) -> bytes:
    """SHORT_BINSTRING: how Python 2's cPickle writes a short `str` (read back as bytes)."""
    return b"U" + bytes([len(value)]) + value


def _int(value: int) -> bytes:
    """BININT1 or BININT2: how cPickle writes a small non-negative int."""
    return b"K" + bytes([value]) if value < 256 else b"M" + struct.pack("<H", value)


def py2_cifar_batch(data: np.ndarray, labels: list[int]) -> bytes:
    """A CIFAR batch byte for byte as the original files hold it (Python 2 cPickle, protocol 2,
    numpy 1): a dict of `str` keys, `data` an (N, 3072) uint8 array reduced through
    `numpy.core.multiarray._reconstruct` with a version-3 dtype state, `labels` a list of ints
    (the memo opcodes cPickle adds are left out: they change nothing the reader sees)."""
    dtype = (
        b"cnumpy\ndtype\n" + _string(b"u1") + _int(0) + _int(1) + b"\x87R("
        + _int(3) + _string(b"|") + b"NNN" + b"J\xff\xff\xff\xff" * 2 + _int(0) + b"tb"
    )  # fmt: skip
    array = (
        b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n" + _int(0) + b"\x85"
        + _string(b"b") + b"\x87R(" + _int(1) + _int(data.shape[0]) + _int(data.shape[1])
        + b"\x86" + dtype + b"\x89T" + struct.pack("<I", data.nbytes) + data.tobytes() + b"tb"
    )  # fmt: skip
    items = b"](" + b"".join(_int(label) for label in labels) + b"e"
    return (
        b"\x80\x02}(" + _string(b"data") + array + _string(b"labels") + items
        + _string(b"batch_label") + _string(b"training batch") + b"u."
    )  # fmt: skip


def test_cifar10_in_the_original_python2_format_loads(tmp_path):
    rng = np.random.default_rng(0)
    written = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (2, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, 2).tolist()
        (tmp_path / name).write_bytes(py2_cifar_batch(data, labels))
        written[name] = data, labels
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy 2 reads numpy.core.multiarray without a warning
        x_train, y_train, x_test, y_test = load_cifar(tmp_path, "cifar10")
    assert x_train.shape == (10, 3, 32, 32) and x_train.dtype == np.uint8
    assert np.array_equal(x_test.reshape(2, -1), written["test_batch"][0])
    assert y_test.tolist() == written["test_batch"][1] and y_test.dtype == np.int64
    assert y_train.tolist() == sum((written[f"data_batch_{i}"][1] for i in range(1, 6)), [])


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_cifar100_pickled_by_python3_numpy2_loads(tmp_path, protocol):
    data = np.arange(2 * 3072, dtype=np.int64).astype(np.uint8).reshape(2, 3072)
    for name in ("train", "test"):
        batch = {b"data": data, b"fine_labels": [99, 0], b"coarse_labels": [19, 0]}
        (tmp_path / name).write_bytes(pickle.dumps(batch, protocol=protocol))
    x_train, y_train, _, _ = load_cifar(tmp_path, "cifar100")
    assert np.array_equal(x_train.reshape(2, -1), data) and y_train.tolist() == [99, 0]


class _RunsCode:
    """Unpickles as a call of `function(*args)`: what a crafted data_batch_1 does."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


def _crafted_batches(marker) -> list[object]:
    """Batches that, loaded by a plain `pickle.load`, write `marker`: by a shell command, by
    `eval`, by a subprocess, and hidden inside an otherwise valid batch's labels."""
    touch = f"open({str(marker)!r}, 'w').close()"
    return [
        _RunsCode(os.system, f"touch {marker}"),
        _RunsCode(eval, touch),
        _RunsCode(subprocess.call, [sys.executable, "-c", touch]),
        {b"data": np.zeros((1, 3072), np.uint8), b"labels": [_RunsCode(eval, touch)]},
    ]


@pytest.mark.parametrize("case", range(4))
def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(tmp_path, case):
    marker = tmp_path / "ran"
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (tmp_path / name).write_bytes(pickle.dumps({b"data": np.zeros((1, 3072), np.uint8)}))
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps(_crafted_batches(marker)[case]))
    with pytest.raises(pickle.UnpicklingError, match="refused to load the global") as caught:
        load_cifar(tmp_path, "cifar10")
    message = str(caught.value)
    assert str(tmp_path / "data_batch_1") in message
    assert any(name in message for name in ("system", "eval", "subprocess.call")), message
    assert not marker.exists()
