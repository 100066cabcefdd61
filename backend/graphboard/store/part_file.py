"""A task's part file: tb_nodes and its indexes written in bulk, the small tables by SQLite.

tb_nodes is most of a .vis.db (a 27k-record compare: 69k rows, 130 MB), and inserting it
through SQLite, with msprobe's seven indexes and the primary key's, cost more CPU than any
other stage of a compare. :class:`PartFile` hands its rows to ``_btree.TableFile`` (C), which
writes them into SQLite's file format as they come and builds every index from its keys,
sorted once, at :meth:`PartFile.close` (0.3 s instead of 1.1 to 1.6 s at 27k). Only then does
SQLite open the file, to create and fill the other tables (stacks, config, graphboard's
own), whose statements were kept until that moment.

The table's columns, their types and the indexes come from schema.py's DDL, read back from
SQLite itself, so the file is what that DDL would have made.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from graphboard.accel import _btree
from graphboard.errors import StoreError
from graphboard.store import schema
from graphboard.store.node_rows import nodes_layout
from graphboard.store.sqlite_sink import open_db as open_db  # writer.py imports it here

ROW_ID = schema.TB_NODES_COLUMNS.index("id")
ROW_LINK = schema.TB_NODES_COLUMNS.index("matched_node_link")


def _layout() -> tuple[
    str, list[tuple[bool, tuple[int, ...]]], list[tuple[str, str, str, str | None]]
]:
    layout = nodes_layout()
    return layout.affinities, layout.indexes, layout.schema_rows


def _sqlite_version() -> int:
    major, minor, patch = sqlite3.sqlite_version_info
    return major * 1_000_000 + minor * 1_000 + patch


def encode_nodes(rows: list[tuple[Any, ...]], path: Path) -> bytes:
    """tb_nodes rows as records and index keys, for a PartFile's ``insert_encoded``: a
    process that formats rows encodes them itself, and the one writing the file (an
    InsertProcess) only copies the bytes."""
    affinities, indexes, _ = _layout()
    try:
        return _btree.encode_rows(rows, affinities, indexes)
    except (TypeError, ValueError, OverflowError) as error:
        raise StoreError(f"{path}: a tb_nodes row cannot be stored: {error}") from None


class PartFile:  # a statements.NodeWriter
    """A new part file at ``path``; ``close`` completes it, ``abandon`` gives it up (the
    caller removes the file).

    ``indexed``: build msprobe's indexes (a part that becomes the whole file); parts merged
    into another file need only the primary key's.

    Rows inserted ``provisional`` (a compare's golden rows, formatted before the match is
    known) are held until ``correct_node_links`` has fixed their links, or until the next
    rows or the close: rows are numbered in the order they reach the table.
    """

    def __init__(self, path: Path, indexed: bool = True) -> None:
        self.path = path
        affinities, indexes, schema_rows = _layout()
        count = len(indexes) if indexed else 1
        self._schema_rows = schema_rows[: count + 1]
        try:
            self._table = _btree.TableFile(str(path), affinities, indexes[:count])
        except OSError as error:
            raise StoreError(f"{path}: {error}") from None  # "cannot create the file: ..."
        self._held: list[tuple[Any, ...]] = []
        self._statements: list[tuple[str, Any, bool]] = []
        self._nodes_done = False

    def insert_nodes(self, rows: Iterable[tuple[Any, ...]], provisional: bool = False) -> None:
        if provisional:
            self._held.extend(rows)
            return
        self._release_held()
        self._append(rows)

    def insert_encoded(self, encoded: bytes) -> None:
        """Rows encoded by ``encode_nodes``, after any held rows."""
        self._release_held()
        try:
            self._table.append_encoded(encoded)
        except ValueError as error:
            raise StoreError(f"{self.path}: {error}") from None
        except OSError as error:
            raise StoreError(f"{self.path}: writing the nodes table: {error}") from None

    def correct_node_links(self, corrections: Sequence[tuple[str, str]]) -> None:
        """Set matched_node_link of held rows: (link, id) pairs."""
        if corrections:  # often none: every provisional link held (1M rows: 0.8 s to index)
            position = {row[ROW_ID]: index for index, row in enumerate(self._held)}
            for link, row_id in corrections:
                try:
                    index = position[row_id]
                except KeyError:
                    raise StoreError(
                        f"{self.path}: no row {row_id!r} waits for its matched_node_link"
                    ) from None
                row = self._held[index]
                self._held[index] = (*row[:ROW_LINK], link, *row[ROW_LINK + 1 :])
        self._release_held()

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> None:
        self._statements.append((sql, tuple(parameters), False))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        self._statements.append((sql, list(parameters), True))

    def finish_nodes(self) -> None:
        """Write tb_nodes' indexes now: no more rows will come (the other statements may)."""
        if self._nodes_done:
            return
        self._release_held()
        self._nodes_done = True
        try:
            # one thread per core: when the last rows are in, the other processes of a
            # build are at their lightest (summaries), and the indexes are independent
            self._table.finish(self._schema_rows, _sqlite_version(), threads=os.cpu_count() or 1)
        except (OSError, ValueError) as error:
            raise StoreError(f"{self.path}: writing the nodes table: {error}") from None

    def close(self) -> None:
        """Finish tb_nodes, then write the other tables through SQLite, in one transaction."""
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
        self._held.clear()
        self._statements.clear()

    def _release_held(self) -> None:
        if self._held:
            held, self._held = self._held, []
            self._append(held)

    def _append(self, rows: Iterable[tuple[Any, ...]]) -> None:
        try:
            self._table.append(rows)
        except (TypeError, ValueError, OverflowError) as error:
            raise StoreError(f"{self.path}: a tb_nodes row cannot be stored: {error}") from None
        except OSError as error:
            raise StoreError(f"{self.path}: writing the nodes table: {error}") from None
