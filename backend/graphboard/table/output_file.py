"""An export is written beside its final name and renamed into place, so a failed or
interrupted export leaves nothing half-written under that name."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Run ``write`` on a temporary file in ``path``'s folder, then rename it to ``path``."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.part")
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
