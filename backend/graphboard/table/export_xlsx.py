"""The table as an XLSX workbook: cells as text (msprobe's xlsx holds text too), the header
row frozen and bold with filters on every column, and each flagged row filled: red for an
error, yellow for a warning (the row marking of msprobe's earlier compare releases; 26.2
writes no fills). Written in openpyxl's streaming mode: only the flagged rows' cells are
styled objects."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from graphboard.table import columns as col
from graphboard.table.output_file import write_atomically
from graphboard.table.rows import CompareTable

ERROR_FILL = "FFFF0000"
WARNING_FILL = "FFFFFF00"
_FILLS = {
    "error": PatternFill(fill_type="solid", start_color=ERROR_FILL, end_color=ERROR_FILL),
    "warning": PatternFill(fill_type="solid", start_color=WARNING_FILL, end_color=WARNING_FILL),
}
SHEET_TITLE = "compare_result"


def write_xlsx(table: CompareTable, rows: Iterable[int], path: Path) -> None:
    def write(temporary: Path) -> None:
        workbook = Workbook(write_only=True)
        sheet: Worksheet = workbook.create_sheet(SHEET_TITLE)
        sheet.freeze_panes = "A2"
        bold = Font(bold=True)
        header = []
        for name in table.columns:
            cell = WriteOnlyCell(sheet, value=name)
            cell.font = bold
            header.append(cell)
        sheet.append(header)
        result_at = table.columns.index(col.RESULT)
        count = 0
        for row in rows:
            cells = table.cells[int(row)]
            fill = _FILLS.get(cells[result_at])
            if fill is None:
                sheet.append(cells)
            else:
                styled = []
                for value in cells:
                    cell = WriteOnlyCell(sheet, value=value)
                    cell.fill = fill
                    styled.append(cell)
                sheet.append(styled)
            count += 1
        last = get_column_letter(len(table.columns))
        sheet.auto_filter.ref = f"A1:{last}{count + 1}"
        workbook.save(temporary)

    write_atomically(path, write)
