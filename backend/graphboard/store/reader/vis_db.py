"""Opening a .vis.db for reading: :func:`open_vis_db` gives the open file, a :class:`VisDb`.

Reads are plain functions in the reader's modules taking the open file (and a rule set where
verdicts are involved): :mod:`.graphs`, :mod:`.listing`, :mod:`.overlay`, :mod:`.rules`,
:mod:`.summaries`, :mod:`.tree`, :mod:`.node_data`, :mod:`.search`, :mod:`.peers` and
:mod:`.manual_matches`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from graphboard.errors import StoreError
from graphboard.store.reader.opening import VisDb, connect

__all__ = ["VisDb", "open_vis_db"]


@contextmanager
def open_vis_db(path: Path, cache_dir: Path, *, writable: bool = False) -> Iterator[VisDb]:
    """Open a .vis.db for reading (or, with ``writable``, for manual matching)."""
    conn = connect(path, writable=writable)
    db: VisDb | None = None
    try:
        db = VisDb(path, conn, cache_dir)
        yield db
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path.name}: {error}") from None
    finally:
        if db is not None:
            db.close()  # and its connection
        else:
            conn.close()
