"""An export is written beside its final name and renamed into place, so a failed or
interrupted export leaves nothing half-written under that name. A process killed mid-export
(SIGKILL runs no cleanup) leaves its part file; the next export to that name removes the
parts whose process is gone."""

from __future__ import annotations

import errno
import glob
import os
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path


def part_name(path: Path, pid: int) -> str:
    return f".{path.name}.{pid}.part"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def clear_leftovers(path: Path) -> list[Path]:
    """Remove the part files of exports to ``path`` whose process has ended."""
    removed = []
    prefix, suffix = f".{path.name}.", ".part"
    for part in path.parent.glob(f".{glob.escape(path.name)}.*.part"):
        pid = part.name[len(prefix) : -len(suffix)]
        if pid.isdigit() and not _alive(int(pid)):
            part.unlink(missing_ok=True)
            removed.append(part)
    return removed


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Run ``write`` on a temporary file in ``path``'s folder, then rename it to ``path``."""
    clear_leftovers(path)
    temporary = path.with_name(part_name(path, os.getpid()))
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        # a read-only folder, where it was never made: the write's error is the one to tell
        with suppress(OSError):
            temporary.unlink(missing_ok=True)


def claim_name(written: Path, path: Path, *, overwrite: bool) -> None:
    """Move the finished ``written`` to ``path`` (same folder); unless ``overwrite``, never
    over an existing file (FileExistsError), checked atomically by a hard link."""
    if overwrite:
        os.replace(written, path)
        return
    try:
        os.link(written, path)
    except FileExistsError:
        raise
    except OSError:  # a filesystem without hard links: checked, then renamed
        if path.exists():
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        os.replace(written, path)
        return
    written.unlink()
