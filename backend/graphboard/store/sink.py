"""The one place a task's rows go: its part file, tb_nodes in bulk and the other tables.

:func:`open_sink` gives a PartSink (store/statements.py). The reference writes through SQLite
(store/sqlite_sink.py): tb_nodes created by schema.py's DDL, its rows inserted in one
transaction, msprobe's indexes created once the last row is in. When the compiled B-tree
writer is built (``accel.compiled("btree")``), tb_nodes and its indexes go straight into
SQLite's file format instead (store/compiled_sink.py). Both give the same tables, row for
row and column for column, and refuse the same rows with the same words.

``indexed``: msprobe's indexes too (schema.MSPROBE_INDEX_COLUMNS), for a part that is the
whole .vis.db; parts merged into another file need only the primary key's.
"""

from __future__ import annotations

from pathlib import Path

from graphboard.store import compiled_sink
from graphboard.store.sqlite_sink import SqliteSink, open_db
from graphboard.store.statements import PartSink

__all__ = ["PartSink", "open_db", "open_sink"]


def open_sink(path: Path, indexed: bool) -> PartSink:
    """A new part file at ``path`` (never an existing file: that is an error)."""
    if compiled_sink.available():
        return compiled_sink.CompiledSink(path, indexed)
    return SqliteSink(path, indexed)
