"""An export is written beside its final name and renamed into place, so a failed or
interrupted export leaves nothing half-written under that name."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Run ``write`` on a temporary file in ``path``'s folder, then rename it to ``path``."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
