"""tb_nodes written by the compiled B-tree writer (accel/_btree.c), behind store/sink.py.

SQLite spends most of a part's writing time keeping tb_nodes' primary key and msprobe's
indexes; ``_btree.TableFile`` packs the rows into table pages as they come and builds every
index from its keys, sorted once. SQLite opens the file only at the close, to create and fill
the other tables. The file holds what store/sqlite_sink.py's would, row for row.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from graphboard import accel
from graphboard.errors import StoreError
from graphboard.store import schema
from graphboard.store.node_rows import NODES_FAILURE, ROW_FAILURE, nodes_layout
from graphboard.store.sqlite_sink import open_db

_btree = accel.compiled("btree")


def _sqlite_version() -> int:
    major, minor, patch = sqlite3.sqlite_version_info
    return major * 1_000_000 + minor * 1_000 + patch


class CompiledSink:
    """A PartSink (store/sink.py) whose tb_nodes indexes are built at ``finish_nodes``; the
    other tables' statements are kept and run through SQLite at the close, in one
    transaction. Only when the module is built (``available``)."""

    def __init__(self, path: Path, indexed: bool) -> None:
        if _btree is None:
            raise RuntimeError("graphboard.accel._btree is not built")
        self.path = path
        layout = nodes_layout()
        count = len(layout.indexes) if indexed else 1
        self._schema_rows = layout.schema_rows[: count + 1]
        try:
            self._table = _btree.TableFile(str(path), layout.affinities, layout.indexes[:count])
        except OSError as error:
            raise StoreError(f"{path}: {error}") from None  # "cannot create the file: ..."
        self._statements: list[tuple[str, Any, bool]] = []
        self._nodes_done = False

    def insert_nodes(self, rows: Iterable[tuple[Any, ...]], /) -> None:
        try:
            self._table.append(rows)
        except (TypeError, ValueError, OverflowError) as error:
            raise StoreError(f"{self.path}: {ROW_FAILURE}: {error}") from None
        except OSError as error:
            raise StoreError(f"{self.path}: {NODES_FAILURE}: {error}") from None

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> None:
        self._statements.append((sql, tuple(parameters), False))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        self._statements.append((sql, list(parameters), True))

    def finish_nodes(self) -> None:
        if self._nodes_done:
            return
        self._nodes_done = True
        try:
            # one thread per core: the indexes are independent, and when the last rows are
            # in, the rest of a task (summaries) is light
            self._table.finish(self._schema_rows, _sqlite_version(), threads=os.cpu_count() or 1)
        except (OSError, ValueError) as error:
            raise StoreError(f"{self.path}: {NODES_FAILURE}: {error}") from None

    def close(self) -> None:
        self.finish_nodes()
        conn = open_db(self.path)
        try:
            schema.create_tables(conn)  # all but tb_nodes, which is there
            conn.execute("BEGIN")
            for sql, parameters, many in self._statements:
                if many:
                    conn.executemany(sql, parameters)
                else:
                    conn.execute(sql, parameters)
            conn.execute("COMMIT")
        except sqlite3.Error as error:
            raise StoreError(f"{self.path}: {error}") from None
        finally:
            conn.close()
            self._statements.clear()

    def abandon(self) -> None:
        self._table.close()
        self._statements.clear()


def available() -> bool:
    """Whether this process writes tb_nodes through the compiled writer."""
    return _btree is not None
