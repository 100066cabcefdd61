"""Whether a .vis.db is sound enough to write to: SQLite's own ``integrity_check``.

Reads of a damaged file fail where they touch the damage ("database disk image is
malformed", a 422); a write may touch none of it and succeed, adding rows to a file that no
one can read whole, and SQLite may then reuse a page the damage made look free, spreading
it. So a write first runs the check, the one SQLite documents for this, and a file that
fails is refused as its reads are. ``integrity_check`` rather than ``quick_check``: the
damage two writers leave ("wrong # of entries in index") is in what only the full check
compares (an index against its table). Its cost is one read of the file, which a manual
write, a human's click, can afford; the build path never runs it.
"""

from __future__ import annotations

import sqlite3

_PROBLEMS_SHOWN = 3  # enough to say what is wrong; the check stops after these


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
