"""The old name of a task's part file, until its last callers open parts by
:func:`graphboard.store.sink.open_sink` (then this module goes)."""

from __future__ import annotations

from pathlib import Path

from graphboard.store.sink import PartSink, open_sink
from graphboard.store.sqlite_sink import open_db as open_db  # writer.py imports it here


def PartFile(path: Path, indexed: bool = True) -> PartSink:
    return open_sink(path, indexed)
