"""A part file written through SQLite: the reference behind store/sink.py, on any install.

tb_nodes is created by schema.py's DDL and its rows inserted in one transaction, in batches,
in rowid order (node_order, as they come); msprobe's indexes are created once the last row is
in, which sorts each once instead of keeping it up to date row by row. Everything runs in the
caller's thread: a writer thread taking over from ``finish_nodes`` did not make a compare
faster (bench/results/sink.md), and one inserting the rows stalls, since each row's statement
hands the GIL back and forth (bench/results/sqlite_sink.md).
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from graphboard.errors import StoreError
from graphboard.store import node_rows, schema
from graphboard.store.node_rows import NODES_FAILURE, ROW_FAILURE

_BATCH = 2000  # tb_nodes rows checked and inserted at once
_NODES_INSERT = f"INSERT INTO tb_nodes VALUES ({', '.join('?' * len(schema.TB_NODES_COLUMNS))})"


# How a file being built is written (bench/results/sqlite_sink.md measures each). Nobody else
# sees it until it is renamed into place (a task's .partN, finish's temporary file; a build
# that fails removes it), so no journal, no fsync, and its lock held from the first write to
# the close. 16 KiB pages: a tb_nodes row with its parameters' JSON (a few KiB) mostly fits
# one page, so fewer overflow pages to chain and a quarter of the writes (4 KiB: 8% more CPU
# in the sink). page_size only acts on a new, empty file; a finished part keeps its own.
BUILD_PRAGMAS = (
    "PRAGMA page_size=16384",
    "PRAGMA journal_mode=OFF",
    "PRAGMA synchronous=OFF",
    "PRAGMA locking_mode=EXCLUSIVE",
    "PRAGMA cache_size=-262144",  # 256 MiB: a 27k compare's part stays in memory until the commit
)


def open_db(path: Path) -> sqlite3.Connection:
    """A database being built (new or a finished part), tuned for one bulk writer."""
    try:
        conn = sqlite3.connect(path, isolation_level=None)
        for pragma in BUILD_PRAGMAS:
            conn.execute(pragma)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: cannot open the database: {error}") from None
    return conn


def _create(path: Path) -> None:
    """Make the empty file, which SQLite takes for an empty database; never an existing one."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except OSError as error:
        raise StoreError(f"{path}: cannot create the file: {error.strerror}") from None


class SqliteSink:
    """A PartSink (store/statements.py) through sqlite3."""

    def __init__(self, path: Path, indexed: bool) -> None:
        self.path = path
        self._indexed = indexed
        _create(path)
        self._conn = open_db(path)
        try:
            schema.create_tables(self._conn)
            self._conn.execute("BEGIN")
        except sqlite3.Error as error:
            self._conn.close()
            raise StoreError(f"{path}: {error}") from None
        self._stored = 0  # tb_nodes rows in the table
        self._nodes_done = False

    def insert_nodes(self, rows: Iterable[tuple[Any, ...]], /) -> None:
        if self._nodes_done:
            raise StoreError(f"{self.path}: {ROW_FAILURE}: the table is already finished")
        iterator = iter(rows)
        while batch := list(itertools.islice(iterator, _BATCH)):
            self._insert_batch(batch)

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> None:
        try:
            self._conn.execute(sql, parameters)
        except sqlite3.Error as error:
            raise StoreError(f"{self.path}: {error}") from None

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        try:
            self._conn.executemany(sql, parameters)
        except sqlite3.Error as error:
            raise StoreError(f"{self.path}: {error}") from None

    def finish_nodes(self) -> None:
        if self._nodes_done:
            return
        self._nodes_done = True
        if self._indexed:
            try:
                schema.create_indexes(self._conn)
            except sqlite3.Error as error:
                raise StoreError(f"{self.path}: {NODES_FAILURE}: {error}") from None

    def close(self) -> None:
        """Create the indexes if not yet done, then commit: the file is complete."""
        try:
            self.finish_nodes()
            self.execute("COMMIT")
        finally:
            self._conn.close()

    def abandon(self) -> None:
        self._conn.close()

    def _insert_batch(self, rows: list[tuple[Any, ...]]) -> None:
        if not node_rows.plain(rows, self._indexed):
            problem = node_rows.refusal(rows, self._indexed)
            if problem is not None:
                raise StoreError(f"{self.path}: {ROW_FAILURE}: {problem}")
        try:
            self._conn.executemany(_NODES_INSERT, rows)
        except (sqlite3.Error, OverflowError) as error:
            raise StoreError(f"{self.path}: {self._refused(rows, error)}") from None
        self._stored += len(rows)

    def _refused(self, rows: list[tuple[Any, ...]], error: Exception) -> str:
        """Why SQLite refused ``rows``, in the words _btree.c would use."""
        problem = node_rows.refusal(rows, self._indexed)  # an integer beyond 64 bits
        if problem is not None:
            return f"{ROW_FAILURE}: {problem}"
        if isinstance(error, sqlite3.IntegrityError) and "UNIQUE" in str(error):
            # the rows before the refused one are in (a statement fails alone)
            (stored,) = self._conn.execute("SELECT count(*) FROM tb_nodes").fetchone()
            key = rows[stored - self._stored][0]
            return f"{NODES_FAILURE}: two rows have the same unique key {key!r}"
        return f"{NODES_FAILURE}: {error}"
