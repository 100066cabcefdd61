"""CSV and XLSX files of the table, and ``graphboard table`` writing them (a real subprocess)."""

from __future__ import annotations

import csv
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from fixture_cases import BuildFn, reference_db
from graphboard.store.reader import open_vis_db
from graphboard.table import command, export_xlsx, pages
from graphboard.table.export_csv import write_csv
from graphboard.table.export_xlsx import column_letter, write_xlsx
from graphboard.table.query import select, sort_key
from graphboard.table.rows import CompareTable, build_table
from test_cli import graphboard_command


@pytest.fixture(scope="module")
def stats_table(built: BuildFn, tmp_path_factory: pytest.TempPathFactory) -> CompareTable:
    with open_vis_db(built("convnet-stats"), tmp_path_factory.mktemp("cache")) as db:
        return build_table(db, 0, 0)


def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_csv_holds_every_row_as_stored(stats_table: CompareTable, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    write_csv(stats_table, range(len(stats_table)), out)
    rows = read_csv(out)
    assert tuple(rows[0]) == stats_table.columns
    assert [tuple(row) for row in rows[1:]] == stats_table.cells  # stacks' newlines survive
    assert b"\r\n" not in out.read_bytes()


def test_xlsx_marks_rows_freezes_the_header_and_filters(
    stats_table: CompareTable, tmp_path: Path
) -> None:
    out = tmp_path / "t.xlsx"
    write_xlsx(stats_table, range(len(stats_table)), out)
    sheet = openpyxl.load_workbook(out).active
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == f"A1:AC{len(stats_table) + 1}"
    assert [cell.value for cell in sheet[1]] == list(stats_table.columns)
    assert sheet["A1"].font.b
    result_at = stats_table.columns.index("Result")
    fills = {"error": export_xlsx.ERROR_FILL, "warning": export_xlsx.WARNING_FILL}
    seen = set()
    for cells, row in zip(stats_table.cells, sheet.iter_rows(min_row=2), strict=True):
        assert tuple(cell.value or "" for cell in row) == cells
        expected = fills.get(cells[result_at])
        colours = {cell.fill.fgColor.rgb if cell.fill.fill_type else None for cell in row}
        assert colours == {expected}, cells[0]
        seen.add(cells[result_at])
    assert seen == {"pass", "warning", "error"}


def test_a_failed_export_leaves_no_file(stats_table: CompareTable, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    with pytest.raises(IndexError):
        write_csv(stats_table, [0, 1, len(stats_table)], out)  # the third row is not there
    assert list(tmp_path.iterdir()) == []


def test_the_rows_shown_are_exported_in_their_order(
    stats_table: CompareTable, tmp_path: Path
) -> None:
    shown = select(stats_table, results=["warning"], sort="NormRelativeErr", descending=True)
    out = tmp_path / "t.csv"
    write_csv(stats_table, shown, out)
    rows = read_csv(out)[1:]
    assert len(rows) == 9 and {row[25] for row in rows} == {"warning"}
    errors = [float(row[15].rstrip("%")) for row in rows]
    assert errors == sorted(errors, reverse=True)


def table_command(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return graphboard_command("table", *args)


@pytest.mark.parametrize("suffix", [".csv", ".xlsx"])
def test_the_command_writes_the_file(built: BuildFn, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"result{suffix}"
    done = table_command(built("convnet-md5"), "-o", out)
    assert done.returncode == 0, done.stderr
    assert "rows)" in done.stderr
    if suffix == ".csv":
        header = read_csv(out)[0]
    else:
        header = [cell.value for cell in openpyxl.load_workbook(out).active[1]]
    assert header[8:10] == ["NPU MD5", "BENCH MD5"]


def test_the_command_refuses_bad_input_in_one_line(built: BuildFn, tmp_path: Path) -> None:
    build = built("convnet-stats", compare=False)
    cases = [
        ((built("convnet-stats"), "-o", tmp_path / "t.txt"), "expected a .csv or .xlsx"),
        ((tmp_path / "none.vis.db", "-o", tmp_path / "t.csv"), "no such file"),
        ((build, "-o", tmp_path / "t.csv"), "a build, not a compare"),
        ((built("convnet-stats"), "-o", tmp_path / "t.csv", "--step", "4"), "no graph for step 4"),
        ((built("convnet-ddp2"), "-o", tmp_path / "t.csv"), "steps [0, 1]: choose one with --step"),
        (
            (built("convnet-ddp2"), "-o", tmp_path / "t.csv", "--step", "1"),
            "ranks [0, 1]: choose one with --rank",
        ),
    ]
    for args, message in cases:
        done = table_command(*args)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], done.stderr
    assert list(tmp_path.iterdir()) == []


def test_column_letters_run_past_z() -> None:
    from openpyxl.utils import get_column_letter

    assert [column_letter(n) for n in range(1, 800)] == [
        get_column_letter(n) for n in range(1, 800)
    ]


def test_xlsx_cells_keep_what_xml_can_hold(stats_table: CompareTable, tmp_path: Path) -> None:
    odd = CompareTable(
        stats_table.mode,
        stats_table.columns,
        [('a<b> & "c"\n  d ', "bell\x07", *stats_table.cells[0][2:])],
        ["a"],
    )
    out = tmp_path / "odd.xlsx"
    write_xlsx(odd, [0], out)
    row = next(openpyxl.load_workbook(out).active.iter_rows(min_row=2, values_only=True))
    assert row[:2] == ('a<b> & "c"\n  d ', "bell\ufffd")


@pytest.mark.parametrize("descending", [False, True])
def test_a_sort_puts_numbers_first_either_way(stats_table: CompareTable, descending: bool) -> None:
    """Largest first opens on the largest error, not on the ``N/A`` rows; ties keep row order."""
    column = "MaxRelativeErr"
    at = stats_table.columns.index(column)
    cells = [
        stats_table.cells[int(row)][at]
        for row in select(stats_table, sort=column, descending=descending)
    ]
    kinds = [sort_key(cell)[0] for cell in cells]
    assert 0 < kinds.count(1) < len(kinds)  # the fixture has both numbers and text here
    assert kinds == sorted(kinds)  # every number before every text cell
    numbers = [sort_key(cell)[1] for cell in cells if sort_key(cell)[0] == 0]
    assert numbers == sorted(numbers, reverse=descending)
    assert numbers[0] != numbers[-1]


def test_sorting_by_result_puts_errors_first(stats_table: CompareTable) -> None:
    """Result sorted by its words put pass before warning; it sorts by severity now, so the
    page's "Errors first" (sort=Result) opens on the errors, then the warnings."""
    at = stats_table.columns.index("Result")
    shown = [stats_table.cells[int(row)][at] for row in select(stats_table, sort="Result")]
    first_of = {level: shown.index(level) for level in ("error", "warning", "pass")}
    assert first_of["error"] == 0 and first_of["error"] < first_of["warning"] < first_of["pass"]
    assert shown == sorted(shown, key=["error", "warning", "pass"].index)
    reverse = [
        stats_table.cells[int(row)][at]
        for row in select(stats_table, sort="Result", descending=True)
    ]
    assert reverse == sorted(shown, key=["pass", "warning", "error"].index)


STREAMED = {
    "ours/convnet-stats": lambda built: built("convnet-stats", overflow_check=True),
    "ours/convnet-md5": lambda built: built("convnet-md5"),
    "ours/convnet-tensor": lambda built: built("convnet-tensor"),
    "msprobe/convnet-stats": lambda _built: reference_db("convnet-stats", "reference-oc"),
    "msprobe/layer-mapping": lambda _built: reference_db("layer-mapping"),
}


@pytest.mark.parametrize("case", sorted(STREAMED))
def test_the_command_streams_the_whole_tables_file(
    built: BuildFn, tmp_path: Path, case: str
) -> None:
    """``graphboard table`` writes from the row index, a few hundred nodes at a time: the same
    bytes as the whole table's CSV, and the same cells in its XLSX."""
    path = STREAMED[case](built)
    with open_vis_db(path, tmp_path / "cache") as db:
        whole = build_table(db, 0, 0)
    write_csv(whole, range(len(whole)), tmp_path / "whole.csv")
    assert command.export(path, tmp_path / "streamed.csv", None, None) == len(whole)
    assert (tmp_path / "streamed.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    assert command.export(path, tmp_path / "streamed.xlsx", None, None) == len(whole)
    sheet = openpyxl.load_workbook(tmp_path / "streamed.xlsx").active
    rows = sheet.iter_rows(min_row=2, values_only=True)
    assert [tuple(cell or "" for cell in row) for row in rows] == whole.cells


def test_the_command_falls_back_to_the_whole_table_when_the_index_disagrees(
    built: BuildFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node whose rows are not what the index says, found midway: the part written so far
    is dropped and the file is written again from the whole table."""
    path = built("convnet-stats")
    real = pages.rows_at

    def disagreeing(table: pages.IndexedTable, positions: Any) -> Iterator[Any]:
        rows = real(table, positions)
        yield next(rows)
        raise pages.IndexDisagrees("node x: 3 rows, the index says 2")

    monkeypatch.setattr(command, "rows_at", disagreeing)
    with open_vis_db(path, tmp_path / "cache") as db:
        whole = build_table(db, 0, 0)
    assert command.export(path, tmp_path / "t.csv", None, None) == len(whole)
    assert [tuple(row) for row in read_csv(tmp_path / "t.csv")[1:]] == whole.cells
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == ["t.csv"]  # no part
