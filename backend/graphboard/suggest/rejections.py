"""Pairs a user rejected, kept inside the .vis.db (a table of graphboard's own, beside the
manual matches) so they are not proposed again."""

from __future__ import annotations

from pathlib import Path

from graphboard.server.matching.access import writing
from graphboard.server.settings import Settings
from graphboard.store.reader import VisDb
from graphboard.store.reader.opening import table_names

TABLE = "gb_suggest_rejections"
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS main.{TABLE} (step INTEGER NOT NULL, rank INTEGER NOT NULL, "
    "target TEXT NOT NULL, golden TEXT NOT NULL, PRIMARY KEY (step, rank, target, golden))"
)


def rejected(db: VisDb, step: int, rank: int) -> set[tuple[str, str]]:
    """(target, golden) pairs rejected for a (step, rank)."""
    if TABLE not in table_names(db.conn):
        return set()
    return {
        (str(target), str(golden))
        for target, golden in db.conn.execute(
            f"SELECT target, golden FROM main.{TABLE} WHERE step = ? AND rank = ?", (step, rank)
        )
    }


def reject(path: Path, settings: Settings, step: int, rank: int, target: str, golden: str) -> None:
    """Remember that ``golden`` is not ``target``'s counterpart (one write transaction, as a
    manual match: refused on a read-only file or with matching turned off)."""
    with writing(path, settings) as db:
        db.conn.execute(_CREATE)
        db.conn.execute(
            f"INSERT OR IGNORE INTO main.{TABLE} (step, rank, target, golden) VALUES (?, ?, ?, ?)",
            (step, rank, target, golden),
        )
