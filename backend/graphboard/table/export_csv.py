"""The table as CSV, as msprobe compare writes its ``compare_result_*.csv``: a header, then
one line per row, quoted only where a cell needs it, ``\\n`` line ends. A cell a spreadsheet
would run as a formula gets a leading ``'`` (:mod:`graphboard.table.cell_safety`).

The text comes in chunks (:func:`csv_chunks`), so the server streams a download as it is
made and ``graphboard table`` writes a file from the same chunks."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from graphboard.table.cell_safety import inert_row
from graphboard.table.output_file import write_atomically
from graphboard.table.rows import CompareTable

ROWS_PER_CHUNK = 2000  # a few hundred KB of text per chunk


def csv_chunks(table: CompareTable, rows: Iterable[int]) -> Iterator[str]:
    """The CSV text of ``table``'s rows at ``rows``, a chunk of rows at a time."""
    cells = table.cells
    return csv_text_chunks(table.columns, (cells[int(row)] for row in rows))


def csv_text_chunks(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Iterator[str]:
    """The CSV text of a header and rows of cells, a chunk of rows at a time."""
    buffer = io.StringIO()
    plain = csv.writer(buffer, lineterminator="\n")
    # The csv module quotes a cell holding the line terminator's characters, but "\n" is ours:
    # a lone "\r" in a cell would go out bare, and a spreadsheet ends the row there.
    quoted = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
    plain.writerow(columns)
    for count, cells in enumerate(rows, start=1):
        shown = inert_row(cells)
        (quoted if any("\r" in cell for cell in shown) else plain).writerow(shown)
        if count % ROWS_PER_CHUNK == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def write_csv(table: CompareTable, rows: Iterable[int], path: Path) -> None:
    def write(temporary: Path) -> None:
        with temporary.open("w", encoding="utf-8", newline="") as handle:
            for chunk in csv_chunks(table, rows):
                handle.write(chunk)

    write_atomically(path, write)
