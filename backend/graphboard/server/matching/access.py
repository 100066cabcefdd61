"""Opening a .vis.db for one manual-matching write transaction, or saying why it cannot be."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from graphboard.server.errors import Conflict, Forbidden
from graphboard.server.settings import Settings
from graphboard.store import matches, msprobe_columns
from graphboard.store.reader import Source, VisDb, open_vis_db


def read_only_reason(path: Path) -> str | None:
    """Why ``path`` cannot take a write, or None. Write bits count even for root (who may
    write anyway): a user who made a file read-only meant it."""
    for item, what in ((path, "the file"), (path.parent, "the folder holding it")):
        mode = item.stat().st_mode
        if not os.access(item, os.W_OK) or not stat.S_IMODE(mode) & 0o222:
            if item == path:
                return f"{what} is read-only"
            return f"{what} is read-only (SQLite writes a journal file beside the database)"
    return None


@contextmanager
def writing(path: Path, settings: Settings) -> Iterator[VisDb]:
    """The file open for one write transaction, committed if the block succeeds.

    The file keeps its journal mode: graphboard's files stay in rollback mode (a writer adds a
    short-lived -journal, readers never create -wal/-shm); msprobe's WAL files stay WAL.
    """
    if not settings.allow_matching:
        raise Forbidden("manual matching is turned off on this server", code="matching_disabled")
    reason = read_only_reason(path)
    if reason is not None:
        raise Forbidden(f"{path.name}: {reason}; manual matches cannot be saved", code="read_only")
    with open_vis_db(path, settings.cache_dir, writable=True) as db:
        if not db.config().compare:
            raise Conflict(
                f"{path.name} is a build of one run, not a compare: there is nothing to match",
                code="not_a_compare",
            )
        sidecar_before = db.ensure_derived()  # before the write changes the file's stamp
        matches.create_tables(db.conn)
        try:
            db.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise Forbidden(f"{path.name}: cannot write: {error}", code="read_only") from None
        try:
            db.refresh()  # what committed while this request waited for the lock
            yield db
            db.conn.execute("COMMIT")
        except BaseException:
            db.conn.execute("ROLLBACK")
            raise
    if db.source is Source.MSPROBE and sidecar_before is not None:
        # Only graphboard's own tables changed: what was derived from tb_* still holds.
        msprobe_columns.restamp(sidecar_before, path, settings.cache_dir)
