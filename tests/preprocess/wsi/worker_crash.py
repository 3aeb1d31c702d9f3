"""A tile check that crashes its worker on one slide, for the tiling tests.

It lives in a module of its own, importing little, because the pool sends it to the workers by
reference: each fresh worker imports this module (and not a whole test module) to run it.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from reprolab.preprocess.wsi import tile_check

CRASHING_SLIDE = "c.svs"


def crash_on_c(path: str, *args: object) -> tile_check.TileCheck:
    """`check_tiles`, except that a worker given CRASHING_SLIDE kills itself with SIGKILL, as a
    slide that crashes OpenSlide would."""
    if Path(path).name == CRASHING_SLIDE:
        os.kill(os.getpid(), signal.SIGKILL)
    return tile_check.check_tiles(path, *args)
