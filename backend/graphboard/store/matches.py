"""Manual matches: graphboard's own tables in a .vis.db, and the writes to them.

msprobe's viewer writes manual matches into ``tb_nodes`` in place, losing what the builder
wrote. graphboard never touches ``tb_*`` rows: a manual (un)match stores the new state of each
node it (un)pairs (the pair, their twins, descendants) as an overlay row; the reader applies
the overlay over the stored columns and recomputes the ancestors' roll-ups from them. Every
action records the overlay rows it replaced, so undo restores them exactly.

Tables (created on the first match; a file never matched has none of them):

- ``gb_match_overlay``: one row per changed node, its current effective state.
- ``gb_match_actions``: the history, one row per match / unmatch / import.
- ``gb_match_undo``: for each action, the overlay row each node had before it (NULL: none).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, fields
from datetime import UTC, datetime
from typing import Any

import orjson

OVERLAY_TABLE = "gb_match_overlay"
ACTIONS_TABLE = "gb_match_actions"
UNDO_TABLE = "gb_match_undo"

DDL = f"""
CREATE TABLE IF NOT EXISTS {OVERLAY_TABLE} (
    data_source TEXT NOT NULL,
    step INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    node_name TEXT NOT NULL,
    node_order INTEGER NOT NULL,   -- as tb_nodes.node_order
    manual INTEGER NOT NULL,       -- 1: paired / unpaired by a user
    matched INTEGER NOT NULL,      -- 0 / 1
    counterpart TEXT,              -- the paired node on the other side
    counterpart_order INTEGER,     -- its node_order there
    precision_index REAL,
    level INTEGER,                 -- 0 pass, 1 warning, 2 error; NULL: not scored
    introduced INTEGER NOT NULL,   -- a divergence starts here: 0, 1 (warning), 2 (error)
    input_data TEXT,               -- display dicts with the new comparison; NULL: as stored
    output_data TEXT,
    action_id INTEGER NOT NULL,    -- the action that last wrote the row
    PRIMARY KEY (data_source, step, rank, node_name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {ACTIONS_TABLE} (
    id INTEGER PRIMARY KEY,
    created_at TEXT NOT NULL,
    kind TEXT NOT NULL,            -- match | unmatch | import
    step INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    target TEXT,
    golden TEXT,
    options TEXT NOT NULL,         -- JSON
    pairs TEXT NOT NULL,           -- JSON [[target, golden], ...] actually (un)paired
    undone_at TEXT
);
CREATE INDEX IF NOT EXISTS {ACTIONS_TABLE}_by_graph ON {ACTIONS_TABLE} (step, rank, id);
CREATE TABLE IF NOT EXISTS {UNDO_TABLE} (
    action_id INTEGER NOT NULL,
    data_source TEXT NOT NULL,
    node_name TEXT NOT NULL,
    before TEXT,                   -- JSON of the overlay row it replaced; NULL: there was none
    PRIMARY KEY (action_id, data_source, node_name)
) WITHOUT ROWID;
"""


@dataclass(slots=True)
class OverlayRow:
    """The state of one node after a manual (un)match (the overlay's columns)."""

    data_source: str
    step: int
    rank: int
    node_name: str
    node_order: int
    manual: bool
    matched: bool
    counterpart: str | None
    counterpart_order: int | None
    precision_index: float | None
    level: int | None
    introduced: int
    input_data: str | None
    output_data: str | None


OVERLAY_COLUMNS = tuple(field.name for field in fields(OverlayRow))


@dataclass(slots=True)
class Action:
    id: int
    created_at: str
    kind: str
    step: int
    rank: int
    target: str | None
    golden: str | None
    options: dict[str, Any]
    pairs: list[list[str]]
    undone_at: str | None


def create_tables(conn: sqlite3.Connection) -> None:
    conn.executescript(DDL)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def start_action(
    conn: sqlite3.Connection,
    kind: str,
    step: int,
    rank: int,
    target: str | None,
    golden: str | None,
    options: dict[str, Any],
) -> int:
    cursor = conn.execute(
        f"INSERT INTO {ACTIONS_TABLE} (created_at, kind, step, rank, target, golden, options, pairs) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, '[]')",
        (_now(), kind, step, rank, target, golden, orjson.dumps(options).decode()),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def finish_action(
    conn: sqlite3.Connection, action_id: int, pairs: Sequence[tuple[str, str]]
) -> None:
    conn.execute(
        f"UPDATE {ACTIONS_TABLE} SET pairs = ? WHERE id = ?",
        (orjson.dumps([list(pair) for pair in pairs]).decode(), action_id),
    )


def _stored_overlay(
    conn: sqlite3.Connection, side: str, step: int, rank: int, name: str
) -> str | None:
    """The overlay row of a node as JSON (with the action that wrote it), or None."""
    found = conn.execute(
        f"SELECT {', '.join(OVERLAY_COLUMNS)}, action_id FROM {OVERLAY_TABLE} "
        "WHERE data_source = ? AND step = ? AND rank = ? AND node_name = ?",
        (side, step, rank, name),
    ).fetchone()
    if found is None:
        return None
    return orjson.dumps(dict(zip((*OVERLAY_COLUMNS, "action_id"), found, strict=True))).decode()


def put_overlay(conn: sqlite3.Connection, action_id: int, rows: Iterable[OverlayRow]) -> None:
    """Write overlay rows, remembering (once per action) what each replaced."""
    placeholders = ", ".join("?" * (len(OVERLAY_COLUMNS) + 1))
    for row in rows:
        remembered = conn.execute(
            f"SELECT 1 FROM {UNDO_TABLE} WHERE action_id = ? AND data_source = ? AND node_name = ?",
            (action_id, row.data_source, row.node_name),
        ).fetchone()
        if remembered is None:
            before = _stored_overlay(conn, row.data_source, row.step, row.rank, row.node_name)
            conn.execute(
                f"INSERT INTO {UNDO_TABLE} (action_id, data_source, node_name, before) VALUES (?, ?, ?, ?)",
                (action_id, row.data_source, row.node_name, before),
            )
        conn.execute(
            f"INSERT OR REPLACE INTO {OVERLAY_TABLE} ({', '.join(OVERLAY_COLUMNS)}, action_id) "
            f"VALUES ({placeholders})",
            (*astuple(row), action_id),
        )


def last_action(conn: sqlite3.Connection, step: int, rank: int) -> Action | None:
    """The latest action of a (step, rank) that is not undone yet."""
    found = conn.execute(
        f"SELECT id FROM {ACTIONS_TABLE} WHERE step = ? AND rank = ? AND undone_at IS NULL "
        "ORDER BY id DESC LIMIT 1",
        (step, rank),
    ).fetchone()
    return None if found is None else action(conn, int(found[0]))


def action(conn: sqlite3.Connection, action_id: int) -> Action | None:
    found = conn.execute(
        f"SELECT id, created_at, kind, step, rank, target, golden, options, pairs, undone_at "
        f"FROM {ACTIONS_TABLE} WHERE id = ?",
        (action_id,),
    ).fetchone()
    if found is None:
        return None
    values = list(found)
    values[7] = orjson.loads(values[7])
    values[8] = orjson.loads(values[8])
    return Action(*values)


def actions(conn: sqlite3.Connection, step: int, rank: int) -> list[Action]:
    """The history of a (step, rank), oldest first."""
    ids = [
        int(row[0])
        for row in conn.execute(
            f"SELECT id FROM {ACTIONS_TABLE} WHERE step = ? AND rank = ? ORDER BY id", (step, rank)
        )
    ]
    return [found for action_id in ids if (found := action(conn, action_id)) is not None]


def undo_action(conn: sqlite3.Connection, action_id: int, step: int, rank: int) -> int:
    """Put back the overlay rows an action replaced; returns how many nodes it restored."""
    restored = 0
    for side, name, before in conn.execute(
        f"SELECT data_source, node_name, before FROM {UNDO_TABLE} WHERE action_id = ?",
        (action_id,),
    ).fetchall():
        conn.execute(
            f"DELETE FROM {OVERLAY_TABLE} WHERE data_source = ? AND step = ? AND rank = ? AND node_name = ?",
            (side, step, rank, name),
        )
        if before is not None:
            values = orjson.loads(before)
            columns = (*OVERLAY_COLUMNS, "action_id")
            conn.execute(
                f"INSERT INTO {OVERLAY_TABLE} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                tuple(values[column] for column in columns),
            )
        restored += 1
    conn.execute(f"UPDATE {ACTIONS_TABLE} SET undone_at = ? WHERE id = ?", (_now(), action_id))
    return restored


# How far back undo reaches, per (step, rank). The history is a store every write grows; the
# overlay (the current state) is bounded by the nodes, but each action keeps a row per node it
# changed, forever, unless something forgets. A person's session of manual matching is tens
# to hundreds of actions; a thousand keeps every one of those undoable and bounds the file.
HISTORY_LIMIT = 1000


def forget_oldest(conn: sqlite3.Connection, step: int, rank: int, keep: int = HISTORY_LIMIT) -> int:
    """Drop the actions of a (step, rank) older than its latest ``keep`` (and what they
    would restore): the matches they made stay, only undo no longer reaches them. Returns
    how many actions were dropped."""
    cutoff = conn.execute(
        f"SELECT id FROM {ACTIONS_TABLE} WHERE step = ? AND rank = ? ORDER BY id DESC "
        "LIMIT 1 OFFSET ?",
        (step, rank, keep),
    ).fetchone()
    if cutoff is None:
        return 0
    older = f"SELECT id FROM {ACTIONS_TABLE} WHERE step = ? AND rank = ? AND id <= ?"
    conn.execute(
        f"DELETE FROM {UNDO_TABLE} WHERE action_id IN ({older})", (step, rank, int(cutoff[0]))
    )
    dropped = conn.execute(
        f"DELETE FROM {ACTIONS_TABLE} WHERE step = ? AND rank = ? AND id <= ?",
        (step, rank, int(cutoff[0])),
    )
    return int(dropped.rowcount)
