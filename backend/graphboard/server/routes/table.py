"""The compare table of one graph (msprobe compare's rows): a page at a time, filtered and
sorted, and the rows shown downloaded as CSV or XLSX.

A graph's table is built once (one pass over the file, within ``BUILD_SECONDS``) and kept in
:data:`graphboard.table.query.TABLES`; a page is then a slice of the filtered, sorted row
positions. Names are matched as a case-insensitive substring (the search's index), never as
a user's regex."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse
from pydantic import Field
from starlette.background import BackgroundTask

from graphboard.server import schemas
from graphboard.server.deps import Cursor, GraphDb, PageLimit, Rank, Step
from graphboard.server.downloads import attachment
from graphboard.server.errors import ApiError, InvalidParameters, NotFound
from graphboard.store.reader import VisDb
from graphboard.table.export_csv import write_csv
from graphboard.table.export_xlsx import write_xlsx
from graphboard.table.query import TABLES, Rows, select
from graphboard.table.rows import CompareTable, TableError, TableTooSlow, build_table

router = APIRouter(prefix="/api/graphs", tags=["table"], responses=schemas.ERRORS)

BUILD_SECONDS = 60.0  # longest a table may take to build (a million-record graph's order)
MAX_XLSX_ROWS = 1_048_575  # a sheet's rows but its header (Excel's limit)
_MEDIA = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}


class TableTooSlowError(ApiError):
    status = 503
    code = "table_too_slow"


class TableRowOut(schemas.ApiModel):
    node: str = Field(description="the target node the row belongs to (open it in the tree)")
    cells: list[str] = Field(description="one value per column, as ``columns`` names them")


class TablePage(schemas.ApiModel):
    columns: list[str] = Field(description="msprobe compare's columns, then graphboard's")
    items: list[TableRowOut]
    next_cursor: int | None
    total: int = Field(description="rows that pass the filters")


ResultFilter = Annotated[
    list[schemas.LevelName] | None,
    Query(description="keep rows with this Result (repeatable)"),
]
NameFilter = Annotated[
    str | None,
    Query(max_length=1024, description="keep rows whose NPU Name contains this (any case)"),
]
SortColumn = Annotated[
    str | None, Query(max_length=200, description="a column to sort by (numbers numerically)")
]
Descending = Annotated[bool, Query(description="sort largest first")]


def _table(db: VisDb, step: int, rank: int) -> CompareTable:
    deadline = time.monotonic() + BUILD_SECONDS
    try:
        return TABLES.get(
            (db.identity, step, rank), lambda: build_table(db, step, rank, deadline=deadline)
        )
    except TableTooSlow as error:
        raise TableTooSlowError(str(error)) from None
    except TableError as error:
        raise NotFound(str(error), code="no_table") from None


def _shown(
    table: CompareTable,
    result: Sequence[str] | None,
    name: str | None,
    sort: str | None,
    descending: bool,
) -> Rows:
    try:
        return select(
            table,
            results=list(dict.fromkeys(result or [])),
            name=name,
            sort=sort,
            descending=descending,
        )
    except ValueError as error:
        raise InvalidParameters(str(error), code="unknown_column") from None


@router.get("/{graph:path}/table", response_model=TablePage, summary="Compare table rows")
def table_page(
    db: GraphDb,
    step: Step,
    rank: Rank,
    limit: PageLimit,
    cursor: Cursor = None,
    result: ResultFilter = None,
    name: NameFilter = None,
    sort: SortColumn = None,
    descending: Descending = False,
) -> TablePage:
    """msprobe compare's result table of the target graph, one row per parameter, in
    msprobe's order or sorted by a column, filtered by Result and by name; pass
    ``next_cursor`` back as ``cursor`` for the next page."""
    table = _table(db, step, rank)
    shown = _shown(table, result, name, sort, descending)
    start = cursor or 0
    window = shown[start : start + limit]
    return TablePage(
        columns=list(table.columns),
        items=[
            TableRowOut(node=table.nodes[row], cells=list(table.cells[row]))
            for row in map(int, window)
        ],
        next_cursor=start + limit if start + limit < len(shown) else None,
        total=len(shown),
    )


@router.get(
    "/{graph:path}/table-export",
    response_class=FileResponse,
    summary="The rows shown, as CSV or XLSX",
    responses={200: {"content": {media: {} for media in _MEDIA.values()}}},
)
def table_export(
    db: GraphDb,
    step: Step,
    rank: Rank,
    format: Annotated[Literal["csv", "xlsx"], Query(description="file type")] = "csv",
    result: ResultFilter = None,
    name: NameFilter = None,
    sort: SortColumn = None,
    descending: Descending = False,
) -> FileResponse:
    """Every row the same filters and sort show (not only one page), as a file."""
    table = _table(db, step, rank)
    shown = _shown(table, result, name, sort, descending)
    if format == "xlsx" and len(shown) > MAX_XLSX_ROWS:
        raise InvalidParameters(
            f"{len(shown)} rows: a sheet holds at most {MAX_XLSX_ROWS}; filter them, or take the CSV",
            code="too_many_rows",
        )
    handle, temporary = tempfile.mkstemp(prefix="graphboard-table-", suffix=f".{format}")
    os.close(handle)
    path = Path(temporary)
    try:
        (write_xlsx if format == "xlsx" else write_csv)(table, shown, path)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    stem = db.path.name.removesuffix(".vis.db")
    return FileResponse(
        path,
        media_type=_MEDIA[format],
        headers={"Content-Disposition": attachment(f"{stem}_step{step}_rank{rank}.{format}")},
        background=BackgroundTask(path.unlink, missing_ok=True),
    )
