"""What the writer functions need of a database, whichever process or format writes it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol


class Statements(Protocol):
    """SQL statements: a sqlite3 connection, a part file, or the process writing one."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> object: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> object: ...


class NodeWriter(Statements, Protocol):
    """A part being written: tb_nodes rows in bulk (store/part_file.py), other statements."""

    def insert_nodes(self, rows: Iterable[tuple[Any, ...]], provisional: bool = False) -> None: ...

    def correct_node_links(self, corrections: Sequence[tuple[str, str]]) -> None: ...

    def finish_nodes(self) -> None: ...

    def close(self) -> None: ...
