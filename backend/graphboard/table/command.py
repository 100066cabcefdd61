"""``graphboard table FILE.vis.db -o OUT.csv|OUT.xlsx [--step S --rank R]``: msprobe
compare's result table for the file's data mode (its columns in its order, then
graphboard's), one row per target parameter, as CSV or as XLSX with flagged rows filled.

The rows stream from the table's row index (:mod:`graphboard.table.pages`), a few hundred
nodes at a time, as the server's downloads do: a 300k-record table is written without being
held whole. A file whose index cannot be made is written from the whole table."""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np

from graphboard.errors import GraphboardError
from graphboard.store.reader import VisDb, open_vis_db
from graphboard.table.export_csv import csv_text_chunks
from graphboard.table.export_xlsx import xlsx_rows_chunks
from graphboard.table.output_file import claim_name, clear_leftovers, part_name
from graphboard.table.pages import IndexDisagrees, indexed_table, rows_at
from graphboard.table.rows import TableError, build_table

Cells = Sequence[str]
Chunks = Callable[[Sequence[str], int, Iterable[Cells]], Iterator[bytes]]


def _csv_chunks(columns: Sequence[str], _count: int, rows: Iterable[Cells]) -> Iterator[bytes]:
    return (chunk.encode("utf-8") for chunk in csv_text_chunks(columns, rows))


FORMATS: dict[str, Chunks] = {".csv": _csv_chunks, ".xlsx": xlsx_rows_chunks}


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "table",
        help="write msprobe compare's result table of a .vis.db as CSV or XLSX",
        description=__doc__.split(":", 1)[1].strip() if __doc__ else None,
    )
    parser.add_argument("file", type=Path, help="a compare .vis.db (graphboard's or msprobe's)")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, help="OUT.csv or OUT.xlsx (by the suffix)"
    )
    parser.add_argument("--step", type=int, help="the step (needed when the file has several)")
    parser.add_argument("--rank", type=int, help="the rank (needed when the file has several)")
    parser.add_argument(
        "--force", action="store_true", help="overwrite OUT if it exists (else it is refused)"
    )
    parser.set_defaults(run=run)


def _one(kind: str, given: int | None, present: list[int], path: Path) -> int:
    if given is not None:
        if given not in present:  # before any query: SQLite's integers end at 2**63 - 1
            raise TableError(f"{path.name}: no graph for {kind} {given} ({kind}s {present})")
        return given
    if len(present) == 1:
        return present[0]
    raise TableError(f"{path.name}: the file has {kind}s {present}: choose one with --{kind}")


def export(
    path: Path, output: Path, step: int | None, rank: int | None, *, force: bool = False
) -> int:
    """Write the table of ``path`` to ``output``; the number of rows written. An existing
    ``output`` is refused unless ``force``: the operator named it, so it is never renamed
    (graph_build's x_2) nor silently replaced."""
    chunks = FORMATS.get(output.suffix.lower())
    if chunks is None:
        raise GraphboardError(f"{output}: expected a .csv or .xlsx output file")
    if not path.is_file():
        raise GraphboardError(f"{path}: no such file")
    if not output.parent.is_dir():
        raise GraphboardError(f"{output.parent}: no such folder for the output")
    if output.exists() and not force:  # before the work; checked again when it is written
        raise GraphboardError(f"{output}: {_EXISTS}")
    # staged under the part name a killed export leaves, so the next export clears it
    clear_leftovers(output)
    staged = output.with_name(part_name(output, os.getpid()))
    try:
        with tempfile.TemporaryDirectory(prefix="graphboard-table-") as scratch:
            try:
                with open_vis_db(path, Path(scratch)) as db:
                    count = _write(db, step, rank, chunks, staged)
            except sqlite3.Error as error:  # raised before the reader could name the file
                raise GraphboardError(f"{path}: not a readable .vis.db: {error}") from None
        claim_name(staged, output, overwrite=force)
    except FileExistsError:
        raise GraphboardError(f"{output}: {_EXISTS}") from None
    except OSError as error:  # a read-only folder, a full disk: nothing is left behind
        raise GraphboardError(f"{output}: cannot write: {error.strerror or error}") from None
    finally:
        with suppress(OSError):
            staged.unlink(missing_ok=True)
    return count


def _write(db: VisDb, step: int | None, rank: int | None, chunks: Chunks, staged: Path) -> int:
    """Write the table at the chosen graph to ``staged``, streamed from its row index; from
    the whole table when the index cannot be made or disagrees with a node's rows."""
    config = db.config()
    step = _one("step", step, config.steps, db.path)
    rank = _one("rank", rank, config.ranks, db.path)
    indexed = indexed_table(db, step, rank)
    if indexed is not None:
        positions = np.arange(len(indexed.index), dtype=np.int64)
        streamed = (cells for _name, cells in rows_at(indexed, positions))
        try:
            _write_chunks(staged, chunks(indexed.columns, len(positions), streamed))
            return len(positions)
        except IndexDisagrees:
            pass  # written again below, whole
    table = build_table(db, step, rank)
    _write_chunks(staged, chunks(table.columns, len(table), table.cells))
    return len(table)


def _write_chunks(path: Path, chunks: Iterator[bytes]) -> None:
    with path.open("wb") as handle:
        for chunk in chunks:
            handle.write(chunk)


_EXISTS = "exists already; give another name, or --force to overwrite it"


def run(args: argparse.Namespace) -> int:
    count = export(args.file, args.output, args.step, args.rank, force=args.force)
    print(f"graphboard table: wrote {args.output} ({count} rows)", file=sys.stderr)
    return 0
