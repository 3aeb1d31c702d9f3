"""Progress and logs of one workflow job.

Snakemake gives every job a `log:` file; `job_log` sends the job's stdout, stderr (where tqdm
draws its bars) and warnings there, so each job's progress can be followed with `tail -f` and a
failure leaves its traceback beside the job. `progress` is the one tqdm configuration used in
loops: it writes to stderr and stays quiet when asked to.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


@contextlib.contextmanager
def job_log(path: str | Path) -> Iterator[None]:
    """Redirect stdout, stderr and logging into `path` for the duration of a job."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", buffering=1) as handle:
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
