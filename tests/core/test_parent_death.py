"""Children that end with their parent: a SIGKILLed parent leaves no worker, forkserver or
resource tracker behind, for a forkserver pool and for a plain `Process`."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from reprolab.core.parent_death import call_exiting_with_parent, exit_with_parent

KILLS = 3
LIVENESS_WAIT_S = 10.0
"""How long the children of a killed parent get to notice and end (they take well under a
second): a deadline for a liveness check, not a performance threshold."""

needs_proc = pytest.mark.skipif(
    not Path("/proc/self/stat").is_file(), reason="finds the processes of a session in /proc"
)


def session_members(sid: int) -> dict[int, tuple[int, str]]:
    """The living (not zombie) processes of session `sid`: pid -> (parent pid, command line)."""
    found = {}
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                found[int(entry.name)] = (int(fields[1]), command[:200])
    return found


def grandchildren(sid: int) -> list[int]:
    """Pids in session `sid` whose parent is neither the session leader nor outside the session:
    the workers a forkserver of the leader forked."""
    members = session_members(sid)
    return [pid for pid, (parent, _) in members.items() if parent in members and parent != sid]


def start_session(code: str, log: Path) -> subprocess.Popen:
    """`python -c code` as the leader of a new session (its descendants are found by session id,
    even once the leader is gone and they are reparented); stdout and stderr go to `log`."""
    with log.open("w") as out:
        command = [sys.executable, "-c", code]
        return subprocess.Popen(command, stdout=out, stderr=out, start_new_session=True)


def wait_for(condition, deadline_s: float, poll_s: float = 0.005) -> bool:
    """Poll `condition()` until it is true (True) or `deadline_s` passed (False)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll_s)
    return bool(condition())


def kill_session(sid: int) -> None:
    """SIGKILL every living member of session `sid`, by pid."""
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def session_cleanup(leader: subprocess.Popen) -> Iterator[None]:
    """Whatever the test asserts, leave nothing of `leader`'s session running at the end."""
    try:
        yield
    finally:
        kill_session(leader.pid)
        leader.wait()


def kill_and_check_session_ends(leader: subprocess.Popen, log: Path) -> None:
    """SIGKILL the session's leader, then assert every other member of its session ends within
    LIVENESS_WAIT_S (the survivors, if any, are named in the failure)."""
    os.kill(leader.pid, signal.SIGKILL)
    leader.wait()
    ended = wait_for(lambda: not session_members(leader.pid), LIVENESS_WAIT_S, poll_s=0.05)
    assert leader.returncode == -signal.SIGKILL, log.read_text()[-2000:]
    assert ended, f"alive {LIVENESS_WAIT_S} s after the kill: {session_members(leader.pid)}"


def kill_once_started(code: str, log: Path, children: int) -> None:
    """Run `python -c code` in a session of its own; once `children` forkserver children of it
    run, SIGKILL it and check that its whole session ends (`kill_and_check_session_ends`)."""
    leader = start_session(code, log)
    with session_cleanup(leader):
        started = wait_for(lambda: len(grandchildren(leader.pid)) >= children, 60)
        assert started, (session_members(leader.pid), log.read_text()[-2000:])
        kill_and_check_session_ends(leader, log)


POOL = """
import time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from reprolab.core.parent_death import exit_with_parent
pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver"),
                           initializer=exit_with_parent)
busy = pool.submit(time.sleep, 600)  # one worker per pending task: one stays busy,
done = pool.submit(int, 0)  # the other goes idle once this is done; both must end
print("submitted", flush=True)
time.sleep(600)
"""

PROCESS = """
import time
import multiprocessing
from reprolab.core.parent_death import call_exiting_with_parent
child = multiprocessing.get_context("forkserver").Process(
    target=call_exiting_with_parent, args=(time.sleep, 600), daemon=True)
child.start()
print("started", flush=True)
time.sleep(600)
"""


@needs_proc
@pytest.mark.timeout(120)
@pytest.mark.parametrize("code", [POOL, PROCESS], ids=["pool-initializer", "process-target"])
def test_children_of_a_killed_parent_end(tmp_path, code):
    """3 times each: a parent with forkserver children (two pool workers, or one `Process` as
    the video stage starts them) is SIGKILLed; its children, forkserver and resource tracker
    all end within the liveness wait (with multiprocessing alone they stay forever)."""
    for run in range(KILLS):
        kill_once_started(code, tmp_path / f"run{run}.log", 2 if code is POOL else 1)


def test_children_work_normally_while_the_parent_lives():
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(2, mp_context=context, initializer=exit_with_parent) as pool:
        assert list(pool.map(pow, [2, 3], [5, 2])) == [32, 9]
    child = context.Process(target=call_exiting_with_parent, args=(divmod, 7, 2))
    child.start()
    child.join(60)
    assert child.exitcode == 0


def test_exit_with_parent_outside_a_child_is_refused():
    with pytest.raises(RuntimeError, match="not in a multiprocessing child"):
        exit_with_parent()
