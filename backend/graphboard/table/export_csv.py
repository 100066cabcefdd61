"""The table as CSV, as msprobe compare writes its ``compare_result_*.csv``: a header, then
one line per row, quoted only where a cell needs it, ``\\n`` line ends."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from graphboard.table.output_file import write_atomically
from graphboard.table.rows import CompareTable


def write_csv(table: CompareTable, rows: Iterable[int], path: Path) -> None:
    def write(temporary: Path) -> None:
        with temporary.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(table.columns)
            cells = table.cells
            writer.writerows(cells[int(row)] for row in rows)

    write_atomically(path, write)
