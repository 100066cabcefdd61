"""What the writer functions need of a database: a sqlite3 connection or a part sink."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol


class Statements(Protocol):
    """SQL statements: a sqlite3 connection or a part file."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> object: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> object: ...


class PartSink(Statements, Protocol):
    """A task's part file being written (store/sink.py): tb_nodes rows in bulk, the other
    tables' statements; ``close`` completes it, ``abandon`` gives it up (the caller removes
    the file). Every error is a one-line StoreError naming the file; one found while SQLite
    works in the background surfaces at the next call. ``executemany`` may take its rows as
    late as ``close``: what it is given must not change before then."""

    def insert_nodes(self, rows: Iterable[tuple[Any, ...]], /) -> None:
        """tb_nodes rows, in schema.TB_NODES_COLUMNS order and in id order."""

    def finish_nodes(self) -> None:
        """No more tb_nodes rows (the indexes may be built now; statements may still come)."""

    def close(self) -> None: ...

    def abandon(self) -> None: ...
