"""Worker processes that end as soon as the process that started them ends, even by SIGKILL.

Why it is needed: a forkserver pool left behind by a killed main process never ends by itself.
Every worker holds the forkserver's "alive" pipe and the resource tracker's pipe (the
forkserver hands both to each child it forks), so neither of those two sees the end of file
it waits for while a worker lives, and an idle worker waits on its call queue forever (it holds
that queue's write end itself). Ending the workers when the main process dies is enough: the
forkserver and the resource tracker then see their pipes close and exit on their own.

How: `exit_with_parent`, called in the child (as a pool initializer, or through
`call_exiting_with_parent` as a `Process` target), starts a daemon thread that waits on
multiprocessing's own parent sentinel (`multiprocessing.parent_process().join()`) and ends the
process with `os._exit` when it fires. That sentinel is the read end of a pipe whose write end
only the starting process holds (its `Popen` keeps a non-inheritable duplicate), so the kernel
closes it at that process's death, whatever killed it. It was chosen over:

- `prctl(PR_SET_PDEATHSIG)`: it follows the OS parent, which for a forkserver child is the
  forkserver (still alive, and kept alive by the workers), and fires when the parent's
  *thread* that forked ends, not the process;
- watching the main pid (polling `os.kill(pid, 0)` or `os.pidfd_open`): polling is slow and
  can be fooled by pid reuse; pidfds need Linux 5.3 (not the 4.18 of RHEL 8 clusters);
- a pipe of our own passed to the workers: the same mechanism, which multiprocessing
  already sets up for every child of the spawn and forkserver start methods.

Limits: with the "fork" start method, children inherit each other's sentinel write ends, so
none would see its parent end; the project's pools use forkserver. A worker inside a C call
that holds the GIL exits when that call returns (a tile read or a frame decode: milliseconds).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

PARENT_GONE_EXIT = 70
"""Exit status of a child ended because its parent process was gone (nobody reads it)."""

T = TypeVar("T")


def exit_with_parent() -> None:
    """In a multiprocessing child: end this process as soon as its parent process ends.

    Raises RuntimeError when called outside a multiprocessing child (in the main process there
    is no parent sentinel to watch).
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        raise RuntimeError("exit_with_parent: not in a multiprocessing child process")
    watcher = threading.Thread(
        target=_exit_when_gone, args=(parent,), name="exit-with-parent", daemon=True
    )
    watcher.start()


def _exit_when_gone(parent: multiprocessing.process.BaseProcess) -> None:
    """Block until `parent`'s sentinel reports its end, then end this process at once (no
    cleanup: the results it could still produce have nobody to go to)."""
    parent.join()
    os._exit(PARENT_GONE_EXIT)


def call_exiting_with_parent(target: Callable[..., T], *args: Any) -> T:
    """`target(*args)` in a child that ends with its parent: the `Process` target to use where a
    child is started without a pool initializer."""
    exit_with_parent()
    return target(*args)
