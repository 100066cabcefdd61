"""Whether a .vis.db is sound enough to write to: SQLite's own ``integrity_check``.

Reads of a damaged file fail where they touch the damage ("database disk image is
malformed", a 422); a write may touch none of it and succeed, adding rows to a file that no
one can read whole, and SQLite may then reuse a page the damage made look free, spreading
it. So a write first runs the check, the one SQLite documents for this, and a file that
fails is refused as its reads are. ``integrity_check`` rather than ``quick_check``: the
damage two writers leave ("wrong # of entries in index") is in what only the full check
compares (an index against its table).

Its cost is a read of the whole file: 34 s for the 1.7 GB file of a 300k-record compare on
the benchmark machine, too much for every click. So a file found sound is remembered by its
identity (path, size, mtime, inode, SQLite's change counter: any other writer changes one of
them), and a write this process commits marks the file's new identity sound (SQLite wrote
it, under its lock, on a sound file). A file is then checked once per change made elsewhere;
the first write to a large file after a start waits for its check. Memory: at most
``REMEMBERED`` identities.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from contextlib import suppress
from pathlib import Path

from graphboard.store.graph_views import FileIdentity, file_identity
from graphboard.store.reader.held_files import hold, release

_PROBLEMS_SHOWN = 3  # enough to say what is wrong; the check stops after these
REMEMBERED = 1024  # identities of files found sound, least recently used dropped first
_sound: OrderedDict[FileIdentity, None] = OrderedDict()


def damage(conn: sqlite3.Connection) -> str | None:
    """What SQLite's integrity check finds wrong in ``conn``'s main database, or None."""
    try:
        rows = conn.execute(f"PRAGMA main.integrity_check({_PROBLEMS_SHOWN})").fetchall()
    except sqlite3.DatabaseError as error:  # damage where the check itself must read
        return str(error)
    problems = [str(row[0]) for row in rows]
    if problems == ["ok"]:
        return None
    lines = [
        line
        for problem in problems
        for line in problem.splitlines()
        if line and not line.startswith("***")  # "*** in database main ***": we know
    ]
    return "; ".join(lines[:_PROBLEMS_SHOWN]) or "integrity_check failed"


def damage_unless_known(identity: FileIdentity, conn: sqlite3.Connection) -> str | None:
    """:func:`damage`, skipped for a file whose identity was found (or made) sound."""
    if identity in _sound:
        _sound.move_to_end(identity)
        return None
    found = damage(conn)
    if found is None:
        _remember(identity)
    return found


def written_sound(path: Path) -> None:
    """``path`` was just written by a committed transaction of this process (and closed:
    reading its identity opens the file, which must not happen under a lock)."""
    with suppress(OSError):  # gone or unreadable since: its next write checks it
        # through a held descriptor: another thread's connection to the file may be open
        held = hold(path)
        try:
            _remember(file_identity(path, held.stat(), held.read(100)))
        finally:
            release(held)


def _remember(identity: FileIdentity) -> None:
    _sound[identity] = None
    _sound.move_to_end(identity)
    while len(_sound) > REMEMBERED:
        _sound.popitem(last=False)
