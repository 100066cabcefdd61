# One table and its indexes written straight into SQLite's file format (_btree.c); graphboard
# uses it through store/compiled_sink.py.
from collections.abc import Iterable, Sequence
from typing import Any

# the tb_nodes layout (graphboard's store/node_rows.py LAYOUT_VERSION) it was built for
LAYOUT_VERSION: int

class TableFile:
    rows: int
    def __init__(
        self,
        path: str,
        affinities: str,
        indexes: Sequence[tuple[bool, Sequence[int]]],
        page_size: int = 4096,
        spill_bytes: int = 8 << 20,
    ) -> None: ...
    def append(self, rows: Iterable[tuple[Any, ...]]) -> None: ...
    def finish(
        self,
        schema_rows: Sequence[tuple[str, str, str, str | None]],
        sqlite_version: int,
        threads: int = 1,
    ) -> None: ...
    def close(self) -> None: ...
