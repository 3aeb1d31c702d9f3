"""The working folder of a benchmark script: the one given with --dir (made if missing, then
kept, so a slide or a video corpus is written once and reused), or a temporary one that is
removed when the run ends."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def work_folder(kept: Path | None, prefix: str) -> Iterator[Path]:
    """`kept` (made if missing), or a fresh temporary folder named `prefix...`, removed after."""
    if kept is not None:
        kept.mkdir(parents=True, exist_ok=True)
        yield kept
        return
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
