"""A part file written through SQLite: the reference behind store/sink.py, on any install.

tb_nodes is created by schema.py's DDL and its rows inserted in one transaction, in batches;
msprobe's indexes are created once the last row is in, which sorts each once instead of
keeping it up to date row by row.

Python's sqlite3 releases the GIL while SQLite works, so with ``in_background`` a writer
thread takes over from ``finish_nodes`` on: it creates the indexes, runs the statements that
follow (a bounded queue of them) and commits, while the caller goes on (summarising the
graphs). The rows themselves are inserted by the caller: SQLite's work per row is short, and
a thread taking the GIL back after each one would wait for the caller far longer than the
row took (measured: bench/results/sink.md).
"""

from __future__ import annotations

import functools
import itertools
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from graphboard.errors import StoreError
from graphboard.store import node_rows, schema
from graphboard.store.node_rows import NODES_FAILURE, ROW_FAILURE

_BATCH = 2000  # tb_nodes rows per executemany, and per piece of the writer thread's work
_QUEUED = 4  # pieces of work waiting for the writer thread at most
# Whether the writer thread runs SQLite's work (measured: see bench/results/sink.md).
IN_BACKGROUND = True
_NODES_INSERT = f"INSERT INTO tb_nodes VALUES ({', '.join('?' * len(schema.TB_NODES_COLUMNS))})"

Work = Callable[[], None]


def open_db(path: Path, check_same_thread: bool = True) -> sqlite3.Connection:
    """A database being built (new or a finished part), tuned for one bulk writer."""
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=check_same_thread)
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-262144")
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
    """A PartSink (store/sink.py) through sqlite3."""

    def __init__(self, path: Path, indexed: bool, in_background: bool | None = None) -> None:
        self.path = path
        self._indexed = indexed
        if in_background is None:
            in_background = IN_BACKGROUND
        _create(path)
        self._in_background = in_background
        self._conn = open_db(path, check_same_thread=False)  # the writer thread takes it
        try:
            schema.create_tables(self._conn)
            self._conn.execute("BEGIN")
        except sqlite3.Error as error:
            self._conn.close()
            raise StoreError(f"{path}: {error}") from None
        self._stored = 0  # tb_nodes rows in the table
        self._nodes_done = False
        self._writer: _Writer | None = None

    def insert_nodes(self, rows: Iterable[tuple[Any, ...]], /) -> None:
        if self._nodes_done:
            raise StoreError(f"{self.path}: {ROW_FAILURE}: the table is already finished")
        iterator = iter(rows)
        while batch := list(itertools.islice(iterator, _BATCH)):
            self._run(functools.partial(self._insert_batch, batch))

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> None:
        self._run(functools.partial(self._statement, self._conn.execute, sql, tuple(parameters)))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        many = self._conn.executemany
        self._run(functools.partial(self._statement, many, sql, list(parameters)))

    def finish_nodes(self) -> None:
        if self._nodes_done:
            return
        self._nodes_done = True
        if self._in_background:
            self._writer = _Writer(f"sink {self.path.name}")
        if self._indexed:
            self._run(self._create_indexes)

    def close(self) -> None:
        """Wait for the statements, then commit: the file is complete."""
        try:
            self.finish_nodes()
            self._run(functools.partial(self._statement, self._conn.execute, "COMMIT", ()))
            if self._writer is not None:
                self._writer.join()
        finally:
            if self._writer is not None:
                self._writer.stop()  # when an error came first
            self._conn.close()

    def abandon(self) -> None:
        if self._writer is not None:
            self._writer.stop()
        self._conn.close()

    def _run(self, work: Work) -> None:
        if self._writer is None:
            work()
        else:
            self._writer.put(work)

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

    def _create_indexes(self) -> None:
        try:
            schema.create_indexes(self._conn)
        except sqlite3.Error as error:
            raise StoreError(f"{self.path}: {NODES_FAILURE}: {error}") from None

    def _statement(self, run: Callable[[str, Any], object], sql: str, parameters: Any) -> None:
        try:
            run(sql, parameters)
        except sqlite3.Error as error:
            raise StoreError(f"{self.path}: {error}") from None


class _Writer:
    """A thread running work in order, from a bounded queue. The first error stops the work
    and is raised in the caller at its next ``put`` or at ``join``; the thread drains the
    queue to the end all the same, so a caller never waits on a full queue."""

    def __init__(self, name: str) -> None:
        self._queue: queue.Queue[Work | None] = queue.Queue(_QUEUED)
        self._error: BaseException | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def put(self, work: Work) -> None:
        self._raise()
        self._queue.put(work)

    def join(self) -> None:
        """Wait for the work put so far; raise its error, if any."""
        self._queue.put(None)
        self._thread.join()
        self._raise()

    def stop(self) -> None:
        """Skip the work not begun, and wait for the thread."""
        self._stopping = True
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def _serve(self) -> None:
        while (work := self._queue.get()) is not None:
            if self._error is None and not self._stopping:
                try:
                    work()
                except BaseException as error:  # handed to the caller
                    self._error = error

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error
