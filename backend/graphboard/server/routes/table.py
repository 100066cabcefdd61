"""The compare table of one graph (msprobe compare's rows): a page at a time, filtered and
sorted, and the rows shown downloaded as CSV or XLSX.

A page is made from the table's row index (:mod:`graphboard.table.pages`: one SQL pass that
counts the rows and reads their Results, a few bytes a row, cached by file identity): only
the rows asked for are made, so the first page of a million-row table costs its counting.
The index answers the table's own order, the Result filter and the sorts by a verdict
column; a name filter or a sort by another column takes the whole table, built once (within
``BUILD_SECONDS`` and the ``table_cache_bytes`` budget, a 503 naming what needed it past
them) and kept in :data:`graphboard.table.query.TABLES`, weighed in bytes. Names are matched
as a case-insensitive substring (the search's index), never as a user's regex.

A download streams as it is made (no temporary file a stalled client could hold on disk), at
most ``max_exports`` at once: one more is a 503 with Retry-After."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Literal, TypeVar

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import Field

from graphboard.server import schemas
from graphboard.server.deps import Cursor, GraphDb, PageLimit, Rank, SettingsDep, Step
from graphboard.server.downloads import attachment
from graphboard.server.errors import ApiError, InvalidParameters, NotFound
from graphboard.server.settings import Settings
from graphboard.store.reader import VisDb
from graphboard.table import columns as col
from graphboard.table.export_csv import csv_text_chunks
from graphboard.table.export_xlsx import xlsx_rows_chunks
from graphboard.table.pages import (
    IndexDisagrees,
    IndexedTable,
    indexed_select,
    indexed_sorts,
    indexed_table,
    rows_at,
)
from graphboard.table.query import TABLES, Rows, select
from graphboard.table.row_index import RESULT_CELLS
from graphboard.table.rows import (
    CompareTable,
    TableError,
    TableTooLarge,
    TableTooSlow,
    build_table,
)

router = APIRouter(prefix="/api/graphs", tags=["table"], responses=schemas.ERRORS)

BUILD_SECONDS = 60.0  # longest a table may take to build (a million-record graph's order)
MAX_XLSX_ROWS = 1_048_575  # a sheet's rows but its header (Excel's limit)
Shown = TypeVar("Shown", Rows, Rows | None)
_MEDIA = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}


class TableTooSlowError(ApiError):
    status = 503
    code = "table_too_slow"


class TableTooLargeError(ApiError):
    status = 503
    code = "table_too_large"


class TooManyExports(ApiError):
    status = 503
    code = "too_many_exports"


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


def _whole_table(
    db: VisDb, step: int, rank: int, settings: Settings, needs: str | None = None
) -> CompareTable:
    """The whole table (built once, cached); ``needs``: what in the request needs it (said in
    a refusal, with what pages without it)."""
    deadline = time.monotonic() + BUILD_SECONDS
    budget = settings.table_cache_bytes

    def build() -> CompareTable:
        return build_table(db, step, rank, deadline=deadline, max_bytes=budget)

    why = f"; {needs} needs the whole table ({_INDEXED})" if needs else ""
    try:
        return TABLES.get((db.identity, step, rank), build)
    except TableTooSlow as error:
        raise TableTooSlowError(f"{error}{why}") from None
    except TableTooLarge as error:
        raise TableTooLargeError(
            f"{error}, this server's budget for tables (GRAPHBOARD_TABLE_CACHE_BYTES){why}; "
            "`graphboard table FILE -o OUT.csv` writes it"
        ) from None
    except TableError as error:
        raise NotFound(str(error), code="no_table") from None


_INDEXED = (
    f"the table's own order, the Result and name filters and a sort by Result, "
    f"{col.STARTS_HERE}, a metric or an NPU statistic page without it"
)


def _needs_whole(indexed: IndexedTable, name: str | None, sort: str | None) -> str:
    """What in a request the row index could not answer."""
    if sort is not None and sort not in indexed_sorts(indexed.mode):
        return f"a sort by {sort}"
    if sort == col.RESULT:  # the index sorts no Result other than the verdicts and N/A
        return f"a sort by {sort} where a Result is not {', '.join(RESULT_CELLS)}"
    return "a filter by name" if name else f"a sort by {sort}"


def _indexed(db: VisDb, step: int, rank: int) -> IndexedTable | None:
    try:
        return indexed_table(db, step, rank, deadline=time.monotonic() + BUILD_SECONDS)
    except TableTooSlow as error:
        raise TableTooSlowError(f"{db.path.name}: {error}") from None
    except TableError as error:
        raise NotFound(str(error), code="no_table") from None


def _shown(
    select_rows: Callable[..., Shown],
    table: CompareTable | IndexedTable,
    result: Sequence[str] | None,
    name: str | None,
    sort: str | None,
    descending: bool,
) -> Shown:
    """The rows ``select_rows`` (query.select, or pages.indexed_select) shows for a request."""
    try:
        return select_rows(
            table,
            results=list(dict.fromkeys(result or [])),
            name=name,
            sort=sort,
            descending=descending,
        )
    except ValueError as error:
        raise InvalidParameters(str(error), code="unknown_column") from None


def _page(
    columns: Sequence[str],
    rows: Sequence[tuple[str, Sequence[str]]],
    start: int,
    limit: int,
    total: int,
) -> TablePage:
    return TablePage(
        columns=list(columns),
        items=[TableRowOut(node=node, cells=list(cells)) for node, cells in rows],
        next_cursor=start + limit if start + limit < total else None,
        total=total,
    )


@router.get("/{graph:path}/table", response_model=TablePage, summary="Compare table rows")
def table_page(
    db: GraphDb,
    settings: SettingsDep,
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
    start = cursor or 0
    indexed = _indexed(db, step, rank)
    if indexed is not None:
        shown = _shown(indexed_select, indexed, result, name, sort, descending)
        if shown is not None:
            try:
                rows = list(rows_at(indexed, shown[start : start + limit]))
            except IndexDisagrees:
                pass  # the whole table answers
            else:
                return _page(indexed.columns, rows, start, limit, len(shown))
    needs = _needs_whole(indexed, name, sort) if indexed is not None and (name or sort) else None
    table = _whole_table(db, step, rank, settings, needs)
    shown = _shown(select, table, result, name, sort, descending)
    window = shown[start : start + limit]
    rows = [(table.nodes[row], table.cells[row]) for row in map(int, window)]
    return _page(table.columns, rows, start, limit, len(shown))


def exports_slots(request: Request) -> threading.BoundedSemaphore:
    slots: threading.BoundedSemaphore = request.app.state.exports
    return slots


class _Download:
    """A download's bytes holding one of the export slots, given back when the download
    ends, fails, or is dropped unread (a client gone before the first byte: a generator
    never started would run no ``finally``)."""

    def __init__(self, chunks: Iterator[str | bytes], slots: threading.BoundedSemaphore) -> None:
        self._chunks = chunks
        self._slots: threading.BoundedSemaphore | None = slots

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        try:
            chunk = next(self._chunks)
        except BaseException:
            self.close()
            raise
        return chunk.encode() if isinstance(chunk, str) else chunk

    def close(self) -> None:
        slots, self._slots = self._slots, None
        if slots is not None:
            slots.release()

    def __del__(self) -> None:
        self.close()


@router.get(
    "/{graph:path}/table-export",
    response_class=StreamingResponse,
    summary="The rows shown, as CSV or XLSX",
    responses={200: {"content": {media: {} for media in _MEDIA.values()}}},
)
def table_export(
    request: Request,
    db: GraphDb,
    settings: SettingsDep,
    step: Step,
    rank: Rank,
    format: Annotated[Literal["csv", "xlsx"], Query(description="file type")] = "csv",
    result: ResultFilter = None,
    name: NameFilter = None,
    sort: SortColumn = None,
    descending: Descending = False,
) -> StreamingResponse:
    """Every row the same filters and sort show (not only one page), as a file, streamed."""
    indexed = _indexed(db, step, rank)
    shown = None
    if indexed is not None:
        shown = _shown(indexed_select, indexed, result, name, sort, descending)
    columns: Sequence[str]
    if indexed is not None and shown is not None:
        columns = indexed.columns
        cells: Iterator[Sequence[str]] = (cells for _node, cells in rows_at(indexed, shown))
    else:
        needs = _needs_whole(indexed, name, sort) if indexed is not None else None
        table = _whole_table(db, step, rank, settings, needs)
        shown = _shown(select, table, result, name, sort, descending)
        columns = table.columns
        # the table stays referenced by the generator, whatever the cache drops meanwhile
        cells = (table.cells[row] for row in map(int, shown))
    if format == "xlsx" and len(shown) > MAX_XLSX_ROWS:
        raise InvalidParameters(
            f"{len(shown)} rows: a sheet holds at most {MAX_XLSX_ROWS}; filter them, or take the CSV",
            code="too_many_rows",
        )
    slots = exports_slots(request)
    if not slots.acquire(blocking=False):
        raise TooManyExports(
            f"{settings.max_exports} downloads are already streaming (GRAPHBOARD_MAX_EXPORTS); "
            "try again when one ends",
            headers={"Retry-After": "10"},
        )
    chunks = (
        xlsx_rows_chunks(columns, len(shown), cells)
        if format == "xlsx"
        else csv_text_chunks(columns, cells)
    )
    stem = db.path.name.removesuffix(".vis.db")
    return StreamingResponse(
        _Download(chunks, slots),
        media_type=_MEDIA[format],
        headers={"Content-Disposition": attachment(f"{stem}_step{step}_rank{rank}.{format}")},
    )
