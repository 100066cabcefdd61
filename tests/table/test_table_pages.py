"""Pages made from the row index are the whole table's rows: for every order and filter the
index answers, the same row positions as ``query.select`` and the same cells, on graphboard's
builds and msprobe's own files, in each data mode."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from fixture_cases import BuildFn, reference_db
from graphboard.store.reader import VisDb, open_vis_db
from graphboard.table.columns import RESULT, STARTS_HERE
from graphboard.table.pages import (
    INDEXES,
    IndexedTable,
    indexed_select,
    indexed_table,
    rows_at,
    target_fields,
)
from graphboard.table.query import select
from graphboard.table.rows import CompareTable, build_table

ORDERS = [
    (None, False),
    (None, True),
    (RESULT, False),
    (RESULT, True),
    (STARTS_HERE, False),
    (STARTS_HERE, True),
]
FILTERS: list[tuple[str, ...]] = [(), ("error",), ("warning", "error"), ("pass",)]
# substrings in any case; a regex's characters stand for themselves; no name spans two
NAMES = ["input", "GeLu", "FORWARD.0.out", ".*", "input.0\nFunctional", "k", "\u212a"]


def ours(built: BuildFn, case: str) -> Path:
    return built(case, overflow_check=True) if case == "convnet-stats" else built(case)


FILES = {
    "ours/convnet-stats": lambda built: ours(built, "convnet-stats"),
    "ours/convnet-md5": lambda built: ours(built, "convnet-md5"),
    "ours/convnet-tensor": lambda built: ours(built, "convnet-tensor"),
    "ours/layer-mapping": lambda built: ours(built, "layer-mapping"),
    "msprobe/convnet-stats": lambda _built: reference_db("convnet-stats", "reference-oc"),
    "msprobe/convnet-md5": lambda _built: reference_db("convnet-md5"),
    "msprobe/layer-mapping": lambda _built: reference_db("layer-mapping"),
}


Opener = Callable[[Path], VisDb]


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Opener]:
    """Open files for the test's length."""
    with ExitStack() as stack:
        yield lambda path: stack.enter_context(open_vis_db(path, tmp_path))


def both(db: VisDb) -> tuple[IndexedTable, CompareTable]:
    indexed = indexed_table(db, 0, 0)
    assert indexed is not None
    return indexed, build_table(db, 0, 0)


def assert_pages_are_the_whole_tables(indexed: IndexedTable, whole: CompareTable) -> None:
    assert indexed.columns == whole.columns
    assert len(indexed.index) == len(whole)  # the total, counted in SQL
    fields = sorted(target_fields(indexed.mode))
    requests = (
        [
            {"results": results, "sort": sort, "descending": descending}
            for results in FILTERS
            for sort, descending in ORDERS
        ]
        + [
            {"results": results, "sort": sort, "descending": descending}
            for results in FILTERS[:2]
            for sort in fields
            for descending in (False, True)
        ]
        + [
            {"results": results, "name": name, "sort": sort}
            for results in FILTERS[:2]
            for name in NAMES
            for sort in (None, RESULT, *fields[:1])
        ]
    )
    for request in requests:
        shown = indexed_select(indexed, **request)  # type: ignore[arg-type]
        assert shown is not None, request
        expected = select(whole, **request)  # type: ignore[arg-type]
        assert shown.tolist() == expected.tolist(), request
        # every row made for the unsorted views, a page's worth for the sorted ones
        made = list(rows_at(indexed, shown if request.get("sort") is None else shown[:60]))
        assert made == [(whole.nodes[row], whole.cells[row]) for row in expected[: len(made)]]


@pytest.mark.parametrize("graph", sorted(FILES))
def test_index_pages_equal_the_whole_table(graph: str, built: BuildFn, opened: Opener) -> None:
    INDEXES.clear()
    indexed, whole = both(opened(FILES[graph](built)))
    assert len(whole) > 100
    assert_pages_are_the_whole_tables(indexed, whole)
    assert target_fields(indexed.mode) or indexed.mode.value == "md5"
    if graph == "ours/convnet-stats":  # every verdict and a divergence start are there to sort
        assert set(whole.column(RESULT)) == {"pass", "warning", "error"}
        assert {"warning", "error"} <= set(whole.column(STARTS_HERE))
    # a page past the end is empty
    assert list(rows_at(indexed, indexed_select(indexed)[len(whole) + 5 :])) == []  # type: ignore[index]


def test_what_the_index_cannot_answer_is_said(built: BuildFn, opened: Opener) -> None:
    indexed, _whole = both(opened(ours(built, "convnet-stats")))
    assert indexed_select(indexed, sort="NPU Name") is None
    assert indexed_select(indexed, sort="Bench max") is None  # the golden's: not indexed
    assert indexed_select(indexed, sort="MaxRelativeErr") is not None
    with pytest.raises(ValueError, match="no column 'Nope'"):
        indexed_select(indexed, sort="Nope")


def _copy(built: BuildFn, tmp_path: Path) -> Path:
    path = tmp_path / "copy.vis.db"
    shutil.copyfile(ours(built, "convnet-stats"), path)
    return path


def _edit_first_result(path: Path, text: str) -> str:
    """Set the Result of the first scored target parameter stored as pass to ``text`` (a
    JSON value); the name of the parameter."""
    with sqlite3.connect(path) as conn:
        order, data = conn.execute(
            "SELECT node_order, output_data FROM tb_nodes WHERE data_source = 'NPU' "
            'AND output_data LIKE \'%"Result":"pass"%\' ORDER BY node_order LIMIT 1'
        ).fetchone()
        edited = data.replace('"Result":"pass"', f'"Result":{text}', 1)
        conn.execute(
            "UPDATE tb_nodes SET output_data = ? WHERE data_source = 'NPU' AND node_order = ?",
            (edited, order),
        )
    return str(order)


def test_a_result_no_verdict_spells_is_filtered_but_not_sorted_by_the_index(
    built: BuildFn, tmp_path: Path, opened: Opener
) -> None:
    path = _copy(built, tmp_path)
    _edit_first_result(path, '"odd"')
    INDEXES.clear()
    indexed, whole = both(opened(path))
    assert "odd" in whole.column(RESULT)
    for results in FILTERS:
        shown = indexed_select(indexed, results=results)
        assert shown is not None and shown.tolist() == select(whole, results=results).tolist()
    assert indexed_select(indexed, sort=RESULT) is None  # the whole table sorts "odd" as text
    assert indexed_select(indexed, sort=STARTS_HERE) is not None


def test_names_python_lowers_otherwise_than_sqlite_are_filtered_as_the_whole_table_does(
    built: BuildFn, tmp_path: Path, opened: Opener
) -> None:
    """SQLite's lower() leaves all but ASCII as it is; Python lowers the Kelvin sign to k."""
    path = _copy(built, tmp_path)
    with sqlite3.connect(path) as conn:
        order, data = conn.execute(
            "SELECT node_order, output_data FROM tb_nodes WHERE data_source = 'NPU' "
            "AND output_data LIKE '%.output.0\"%' ORDER BY node_order LIMIT 1"
        ).fetchone()
        edited = data.replace('.output.0"', '.output.0\u212aÄ"', 1)
        conn.execute(
            "UPDATE tb_nodes SET output_data = ? WHERE data_source = 'NPU' AND node_order = ?",
            (edited, order),
        )
    indexed, whole = both(opened(path))
    for name in ("0k", "0\u212a", "kä", "KÄ"):
        shown = indexed_select(indexed, name=name)
        assert shown is not None and len(shown) == 1, name
        assert shown.tolist() == select(whole, name=name).tolist(), name


def test_a_null_result_is_na_in_both(built: BuildFn, tmp_path: Path, opened: Opener) -> None:
    path = _copy(built, tmp_path)
    _edit_first_result(path, "null")
    INDEXES.clear()
    indexed, whole = both(opened(path))
    assert "N/A" in whole.column(RESULT)
    assert_pages_are_the_whole_tables(indexed, whole)


def test_a_dict_sqlite_cannot_read_leaves_the_whole_table_to_answer(
    built: BuildFn, tmp_path: Path, opened: Opener
) -> None:
    path = _copy(built, tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE tb_nodes SET input_data = '{\"broken' WHERE data_source = 'NPU' "
            "AND node_order = (SELECT min(node_order) FROM tb_nodes WHERE data_source = 'NPU' "
            "AND input_data LIKE '{\"%')"
        )
    INDEXES.clear()
    assert indexed_table(opened(path), 0, 0) is None
