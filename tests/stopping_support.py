"""For tests that stop a build mid-way: a dump large enough to still be building when the
signal comes, the processes below a pid, and waits bounded in time (never timing asserts)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAKER = REPO / "bench" / "make_synthetic_dump.py"

# Layers of bench/make_synthetic_dump.py's transformer: ~32k records a side, a compare of
# a few seconds here, written in under a second a side.
LAYERS = 300
CHILDREN_GONE_SECONDS = 2.0  # what the issue allows a stopped build's children


def default_stop_signals() -> None:
    """A child's ``preexec_fn``: SIGINT and SIGHUP as a program started from a terminal gets
    them. A test run started under ``nohup`` (or as a shell's background job) passes them on
    ignored, and a build or server that ignores the signal a test sends cannot be stopped
    by it."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def synthetic_dump(folder: Path, variant: str, ranks: int = 1, layers: int = LAYERS) -> Path:
    """A dump root (step0/rank<r>) of the synthetic transformer."""
    subprocess.run(
        [
            sys.executable,
            str(MAKER),
            "--layers",
            str(layers),
            "--ranks",
            str(ranks),
            "--variant",
            variant,
            "--out",
            str(folder),
        ],
        check=True,
        capture_output=True,
    )
    return folder


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(parent pid, state, start time) of a process, None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name, in parentheses, may hold spaces: the fields follow its last ")"
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], fields[19]


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid`` (children, their children...): pid -> start time, so
    that a later check is not fooled by a reused pid. Read from every /proc/<pid>/stat, as
    /proc/<pid>/task/*/children needs a kernel option that is often off."""
    parents: dict[int, list[int]] = {}
    started: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents.setdefault(stat[0], []).append(int(entry.name))
            started[int(entry.name)] = stat[2]
    found: dict[int, str] = {}
    waiting = [pid]
    while waiting:
        for child in parents.get(waiting.pop(), []):
            found[child] = started[child]
            waiting.append(child)
    return found


def running(processes: dict[int, str]) -> list[int]:
    """Those of ``processes`` still running: a zombie has ended (this container's init,
    which adopts orphans, does not reap them)."""
    alive = []
    for pid, start in processes.items():
        stat = _stat(pid)
        if stat is not None and stat[2] == start and stat[1] not in ("Z", "X"):
            alive.append(pid)
    return alive


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds}s for {what}")
        time.sleep(0.02)


def assert_all_gone(processes: dict[int, str]) -> None:
    """Every one of ``processes`` ends within CHILDREN_GONE_SECONDS."""
    try:
        wait_for(lambda: not running(processes), CHILDREN_GONE_SECONDS, "the children to end")
    except AssertionError:
        raise AssertionError(f"still running: {running(processes)} of {processes}") from None


def tagged(tag: str) -> list[int]:
    """Running processes whose environment holds ``GRAPHBOARD_TEST_TAG=<tag>``: a command
    started with it and every process below it, even those orphaned when it ended (their
    parent is then init, so walking down from its pid would miss them)."""
    needle = f"GRAPHBOARD_TEST_TAG={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        stat = _stat(int(entry.name))
        if needle in environment.split(b"\0") and stat is not None and stat[1] not in "ZX":
            found.append(int(entry.name))
    return found
