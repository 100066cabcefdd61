"""tb_nodes written by the compiled B-tree writer (graphboard_btree._btree, the package
packages/graphboard-btree), behind store/sink.py.

SQLite spends most of a part's writing time keeping tb_nodes' primary key and msprobe's
indexes; ``_btree.TableFile`` packs the rows into table pages as they come and builds every
index from its keys, sorted once (past a few megabytes an index's keys go to a file beside
the part in sorted runs, merged at the end: a million-node graph's keys are never all in
memory); a thread of the writer's own writes the pages and runs meanwhile, without the GIL.
SQLite opens the file only at the close, to create and fill the other tables. The
file holds what store/sqlite_sink.py's would, row for row.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from graphboard import accel
from graphboard.errors import StoreError
from graphboard.store import schema
from graphboard.store.node_rows import NODES_FAILURE, ROW_FAILURE, nodes_layout
from graphboard.store.sqlite_sink import open_db

_btree = accel.compiled("btree")
THREADED_INDEX_ROWS = 20_000  # below this many tb_nodes rows the indexes take milliseconds


def _sqlite_version() -> int:
    major, minor, patch = sqlite3.sqlite_version_info
    return major * 1_000_000 + minor * 1_000 + patch


class CompiledSink:
    """A PartSink (store/sink.py) whose tb_nodes indexes are built from ``finish_nodes`` on; the
    other tables' statements are kept and run through SQLite at the close, in one
    transaction. ``executemany`` keeps its iterable as given and takes the rows from it only
    then: a million-node graph's gb_params blobs are never all in memory at once. Only when
    the module is built (``available``)."""

    def __init__(self, path: Path, indexed: bool) -> None:
        if _btree is None:
            raise RuntimeError("graphboard_btree._btree is not installed (or is refused)")
        self.path = path
        layout = nodes_layout()
        count = len(layout.indexes) if indexed else 1
        self._schema_rows = layout.schema_rows[: count + 1]
        try:
            self._table = _btree.TableFile(str(path), layout.affinities, layout.indexes[:count])
        except OSError as error:
            raise StoreError(f"{path}: {error}") from None  # "cannot create the file: ..."
        self._statements: list[tuple[str, Any, bool]] = []  # (sql, parameters, many)
        self._nodes_done = False
        # The indexing thread's end is an Event, never Thread.join: on Python 3.11 a join
        # interrupted by a signal handler's exception (a stop: stopping.py) marks the thread
        # ended while it still runs (bpo-45274's fix), and the table was then freed under it
        # (SIGTERM mid-compare segfaulting, issue 30).
        self._indexed = threading.Event()
        self._indexed.set()  # no thread yet
        self._lock = threading.Lock()  # the table's close: by abandon, or by the thread
        self._abandoned = False
        self._indexing_error: StoreError | None = None

    def insert_nodes(self, rows: Iterable[tuple[Any, ...]], /) -> None:
        if self._nodes_done:  # the indexing thread owns the table now
            raise StoreError(f"{self.path}: {ROW_FAILURE}: the table is already finished")
        try:
            self._table.append(rows)
        except (TypeError, ValueError, OverflowError) as error:
            raise StoreError(f"{self.path}: {ROW_FAILURE}: {error}") from None
        except OSError as error:
            raise StoreError(f"{self.path}: {NODES_FAILURE}: {error}") from None

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> None:
        self._statements.append((sql, tuple(parameters), False))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        self._statements.append((sql, parameters, True))

    def finish_nodes(self) -> None:
        """Build tb_nodes' indexes on a thread of their own: the writer releases the GIL while
        it sorts and packs them, so they are built while the caller computes the summaries
        whose statements come next. ``close`` waits for them."""
        if self._nodes_done:
            return
        self._nodes_done = True
        self._indexed.clear()
        # a daemon: a process ending mid-build (its part abandoned) need not wait for it
        indexing = threading.Thread(
            target=self._build_indexes, name="tb_nodes indexes", daemon=True
        )
        try:
            indexing.start()
        except RuntimeError:  # no thread to be had: none runs, none to wait for
            self._indexed.set()
            raise

    def _build_indexes(self) -> None:
        try:
            self._table.finish(self._schema_rows, _sqlite_version(), threads=self._threads())
        except (OSError, ValueError) as error:
            self._indexing_error = StoreError(f"{self.path}: {NODES_FAILURE}: {error}")
        finally:
            with self._lock:
                self._indexed.set()
                if self._abandoned:  # abandoned meanwhile: the table is this thread's to close
                    self._table.close()

    def _threads(self) -> int:
        """One thread per index, up to one per core (the indexes are independent), once there
        are enough rows for it to pay. Each thread takes page numbers in runs, and the rest of
        a run it leaves unused mid-file stays as free pages: for a small table that would be
        much of the file, and its size would change from one build to the next."""
        return (os.cpu_count() or 1) if self._table.rows >= THREADED_INDEX_ROWS else 1

    def _indexes_built(self) -> None:
        self._indexed.wait()  # a stop signal raises here, and the thread runs on
        if self._indexing_error is not None:
            error, self._indexing_error = self._indexing_error, None
            raise error

    def close(self) -> None:
        self.finish_nodes()
        self._indexes_built()
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
        """Give the part up at once: a stopped build must not wait seconds for indexes no one
        will read. An index build still running closes the table itself when it ends (it
        writes only through its open file, which the caller may remove meanwhile)."""
        self._statements.clear()
        with self._lock:
            if not self._indexed.is_set():
                self._abandoned = True
                return
        self._table.close()


def available() -> bool:
    """Whether this process writes tb_nodes through the compiled writer."""
    return _btree is not None
