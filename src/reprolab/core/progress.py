"""Progress and logs of one workflow job.

Snakemake gives every job a `log:` file; `job_log` sends the job's stdout, stderr (where tqdm
draws its bars) and warnings there, so each job's progress can be followed with `tail -f` and a
failure leaves its traceback beside the job. File descriptors 1 and 2 are redirected too, not
only Python's `sys.stdout`/`sys.stderr`: native libraries (FFmpeg, OpenCV, MKL) write to the
descriptors directly, and their messages belong in the same log. `progress` is the one tqdm
configuration used in loops: it writes to stderr and stays quiet when asked to.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


@contextlib.contextmanager
def descriptors_to(handle, descriptors: tuple[int, ...] = (1, 2)) -> Iterator[None]:
    """Point the process's file `descriptors` at `handle`'s file, restoring them afterwards.

    The duplicates share the file's offset, so native writes and Python's interleave in order.
    """
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(fd) for fd in descriptors]
    try:
        for fd in descriptors:
            os.dup2(handle.fileno(), fd)
        yield
    finally:
        handle.flush()
        for fd, copy in zip(descriptors, saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


@contextlib.contextmanager
def job_log(path: str | Path) -> Iterator[None]:
    """Redirect stdout, stderr (Python's and descriptors 1 and 2) and logging into `path` for
    the duration of a job."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", buffering=1) as handle, descriptors_to(handle):
        old_out, old_err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = handle
        logging.basicConfig(
            stream=handle,
            level=logging.INFO,
            force=True,
            format="%(levelname)s %(name)s: %(message)s",
        )
        logging.captureWarnings(True)
        try:
            yield
        except BaseException:
            traceback.print_exc(file=handle)
            raise
        finally:
            sys.stdout, sys.stderr = old_out, old_err


def progress(
    items: Iterable[T], desc: str, enabled: bool = True, total: int | None = None
) -> Iterable[T]:
    """Wrap `items` in a tqdm bar on stderr (a plain iterable when disabled)."""
    if not enabled:
        return items
    return tqdm(
        items,
        desc=desc,
        total=total,
        file=sys.stderr,
        mininterval=1.0,
        dynamic_ncols=False,
        ncols=80,
    )
