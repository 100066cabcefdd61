"""Pairs a user rejected, kept inside the .vis.db (a table of graphboard's own, beside the
manual matches) so they are not proposed again."""

from __future__ import annotations

from pathlib import Path

from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE
from graphboard.graph.sides import spoken
from graphboard.matching.access import MatchingSettings, writing
from graphboard.refusals import NotFound
from graphboard.store.reader import GraphKey, VisDb, graphs, node_data
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


def check_rejection(db: VisDb, step: int, rank: int, target: str, golden: str) -> None:
    """Only what the file holds may be rejected: a (step, rank) with both sides, a target
    node, a golden node. Anything else would be a row no proposal can ever meet, and a store
    any caller could grow without bound (2,000 requests of made-up names took a file from
    6 to 40 MB)."""
    for side, name in ((TARGET_SIDE, target), (GOLDEN_SIDE, golden)):
        key = GraphKey(side, step, rank)
        if not graphs.has_graph(db, key):
            raise NotFound(
                f"the file has no compare graph for step {step}, rank {rank}",
                code="unknown_graph_part",
            )
        if not node_data.orders_of_names(db, key, [name]):
            raise NotFound(f"no {spoken(side)} node named {name!r}", code="unknown_node")


def reject(
    path: Path, settings: MatchingSettings, step: int, rank: int, target: str, golden: str
) -> None:
    """Remember that ``golden`` is not ``target``'s counterpart (one write transaction, as a
    manual match: refused on a read-only file or with matching turned off)."""
    with writing(path, settings) as db:
        check_rejection(db, step, rank, target, golden)
        db.conn.execute(_CREATE)
        db.conn.execute(
            f"INSERT OR IGNORE INTO main.{TABLE} (step, rank, target, golden) VALUES (?, ?, ?, ?)",
            (step, rank, target, golden),
        )
