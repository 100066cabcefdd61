"""Saving users' manual matches into a .vis.db: one write transaction per request.

graphboard writes only its own tables (:mod:`graphboard.store.matches`), never ``tb_*`` rows,
so the columns derived for an msprobe file before the write still hold afterwards: they are
carried over to the file's new stamp when the file is closed, instead of derived again.
The file keeps its journal mode: graphboard's files stay in rollback mode (a writer adds a
short-lived -journal, readers never create -wal/-shm); msprobe's WAL files stay WAL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from graphboard.errors import StoreError
from graphboard.store import matches
from graphboard.store.reader.opening import BUSY_SECONDS, Source, VisDb


class WriteRefused(StoreError):
    """The file cannot take a write now: another writer holds it, or it is read-only."""

    def __init__(self, message: str, *, busy: bool = False) -> None:
        super().__init__(message)
        self.busy = busy  # another writer held the file past the busy wait: try again


@contextmanager
def matching_write(db: VisDb) -> Iterator[None]:
    """One write transaction, committed if the block succeeds, rolled back if not;
    WriteRefused when the file cannot be locked for writing."""
    derived = db.ensure_derived()  # before the write changes the file's stamp
    try:
        matches.create_tables(db.conn)  # a write too: the first match of a file
        db.conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        raise _refused(db, error) from None
    try:
        db.refresh()  # what committed while this request waited for the lock
        yield
        try:
            db.conn.execute("COMMIT")
        except sqlite3.OperationalError as error:
            # readers still held the file after the busy wait: the commit needs them gone
            if not _busy(error):
                raise
            raise _refused(db, error) from None
    except BaseException:
        # SQLite has rolled back already after some errors (a full disk, an I/O error):
        # a second ROLLBACK would hide the error that ended the transaction.
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    if db.source is Source.MSPROBE and derived is not None:
        db.derived_before_write = derived


def _refused(db: VisDb, error: sqlite3.OperationalError) -> WriteRefused:
    if _busy(error):
        return WriteRefused(
            f"{db.path.name}: another connection held the file for {BUSY_SECONDS:g} s; try again",
            busy=True,
        )
    return WriteRefused(f"{db.path.name}: cannot write: {error}")


def record_action(
    db: VisDb,
    kind: str,
    step: int,
    rank: int,
    pair: tuple[str, str] | None,
    options: dict[str, Any],
    rows: Iterable[matches.OverlayRow],
    paired: Sequence[tuple[str, str]],
) -> int:
    """Record one action (match, unmatch, import) of a user and the overlay rows it
    writes; ``paired`` is what it actually (un)paired. Returns the action's id."""
    target, golden = pair if pair is not None else (None, None)
    action_id = matches.start_action(db.conn, kind, step, rank, target, golden, options)
    matches.put_overlay(db.conn, action_id, rows)
    matches.finish_action(db.conn, action_id, paired)
    matches.forget_oldest(db.conn, step, rank, matches.HISTORY_LIMIT)  # stays bounded
    return action_id


def undo_last_action(db: VisDb, step: int, rank: int) -> tuple[matches.Action, int] | None:
    """Undo the latest action of a (step, rank) not undone yet: (the action as it is now,
    the number of nodes restored); None when there is nothing to undo."""
    last = matches.last_action(db.conn, step, rank) if db.has_overlay else None
    if last is None:
        return None
    restored = matches.undo_action(db.conn, last.id, step, rank)
    undone = matches.action(db.conn, last.id)
    assert undone is not None
    return undone, restored


def _busy(error: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED (their extended codes too): another connection held the
    file past the busy wait."""
    return error.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
