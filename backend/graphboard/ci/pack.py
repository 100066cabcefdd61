"""A dump folder as a .tar.gz, written as a stream (never held in memory)."""

from __future__ import annotations

import tarfile
from pathlib import Path


class PackError(Exception):
    pass


def pack(folder: Path, dest: Path) -> int:
    """Write ``folder`` (under its own name) to ``dest`` as gzip-compressed tar; its size.

    Symbolic links are stored as the files they point to: the server refuses links in an
    archive, and a dump that links its tensors elsewhere should still upload whole."""
    if not folder.is_dir():
        raise PackError(f"{folder}: not a folder")
    name = folder.resolve().name or "dump"
    try:
        with tarfile.open(dest, "w:gz", compresslevel=6, dereference=True) as archive:
            archive.add(folder, arcname=name, recursive=True)
    except OSError as error:
        raise PackError(f"{folder}: cannot pack: {error.strerror or error}") from None
    return dest.stat().st_size
