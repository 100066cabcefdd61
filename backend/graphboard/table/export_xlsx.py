"""The table as an XLSX workbook: cells as text (msprobe's xlsx holds text too), the header
row frozen and bold with filters on every column, and each flagged row filled: red for an
error, yellow for a warning (the row marking of msprobe's earlier compare releases; 26.2
writes no fills).

The sheet's XML is written straight into the zip, a few strings per cell: openpyxl, even in
its streaming mode, builds an element per cell and took 13 s of CPU for a 27k-record
compare's 55k rows; this takes about a tenth of that. The parts are the minimal SpreadsheetML
package (ECMA-376): content types, relationships, workbook, styles, one worksheet.

The zip is written to no file: :func:`xlsx_chunks` hands out its bytes as they are made (a
zip written forward, each entry's sizes in a data descriptor after it), so the server streams
a download without a temporary file, and ``graphboard table`` writes a file from the same
chunks.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path

from graphboard.table import columns as col
from graphboard.table.output_file import write_atomically
from graphboard.table.rows import CompareTable

ERROR_FILL = "FFFF0000"
WARNING_FILL = "FFFFFF00"
SHEET_TITLE = "compare_result"
# cellXfs below: 0 plain, 1 the header (bold), 2 an error row, 3 a warning row
_HEADER_STYLE = 1
_ROW_STYLES = {"error": 2, "warning": 3}
_ROWS_PER_WRITE = 2000
# Characters XML 1.0 cannot hold at all; they become U+FFFD.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_CONTENT_TYPES = (
    _HEAD + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
    "</Types>"
)
_PACKAGE_RELS = (
    _HEAD + f'<Relationships xmlns="{_RELATIONSHIPS}">'
    f'<Relationship Id="rId1" Type="{_OFFICE}/officeDocument" Target="xl/workbook.xml"/>'
    "</Relationships>"
)
_WORKBOOK_RELS = (
    _HEAD + f'<Relationships xmlns="{_RELATIONSHIPS}">'
    f'<Relationship Id="rId1" Type="{_OFFICE}/worksheet" Target="worksheets/sheet1.xml"/>'
    f'<Relationship Id="rId2" Type="{_OFFICE}/styles" Target="styles.xml"/>'
    "</Relationships>"
)


def _solid(rgb: str) -> str:
    return (
        f'<fill><patternFill patternType="solid"><fgColor rgb="{rgb}"/>'
        f'<bgColor rgb="{rgb}"/></patternFill></fill>'
    )


_XF = '<xf numFmtId="0" fontId="{font}" fillId="{fill}" borderId="0" xfId="0"{apply}/>'
_STYLES = (
    _HEAD + f'<styleSheet xmlns="{_MAIN}">'
    '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font>'
    '<font><b/><sz val="11"/><name val="Calibri"/></font></fonts>'
    '<fills count="4"><fill><patternFill patternType="none"/></fill>'
    '<fill><patternFill patternType="gray125"/></fill>'
    f"{_solid(ERROR_FILL)}{_solid(WARNING_FILL)}</fills>"
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="4">'
    + _XF.format(font=0, fill=0, apply="")
    + _XF.format(font=1, fill=0, apply=' applyFont="1"')
    + _XF.format(font=0, fill=2, apply=' applyFill="1"')
    + _XF.format(font=0, fill=3, apply=' applyFill="1"')
    + "</cellXfs>"
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
)


def column_letter(number: int) -> str:
    """Column ``number`` (1-based) as a sheet names it: A ... Z, AA ... AZ, BA ..."""
    letters = ""
    while number:
        number, digit = divmod(number - 1, 26)
        letters = chr(ord("A") + digit) + letters
    return letters


def _text(value: str) -> str:
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _NOT_XML.sub("\ufffd", escaped) if _NOT_XML.search(escaped) else escaped


def _row(number: int, cells: Sequence[str], letters: Sequence[str], style: int) -> str:
    """One ``<row>`` of text cells; a styled row also styles its empty cells (a full band)."""
    styled = f' s="{style}"' if style else ""
    parts = [f'<row r="{number}"{styled} customFormat="1">' if style else f'<row r="{number}">']
    for letter, value in zip(letters, cells, strict=True):
        if value:
            parts.append(
                f'<c r="{letter}{number}"{styled} t="inlineStr"><is>'
                f'<t xml:space="preserve">{_text(value)}</t></is></c>'
            )
        elif style:
            parts.append(f'<c r="{letter}{number}"{styled}/>')
    parts.append("</row>")
    return "".join(parts)


class _Chunks:
    """A forward-only file for ZipFile: what it writes is kept until taken. No ``tell`` or
    ``seek``: ZipFile then writes forward only."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data: bytes, /) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


def xlsx_chunks(table: CompareTable, rows: Iterable[int]) -> Iterator[bytes]:
    """The workbook of ``table``'s rows at ``rows``, a few thousand rows at a time."""
    shown = [int(row) for row in rows]
    cells = table.cells
    return xlsx_rows_chunks(table.columns, len(shown), (cells[row] for row in shown))


def xlsx_rows_chunks(
    columns: Sequence[str], count: int, rows: Iterable[Sequence[str]]
) -> Iterator[bytes]:
    """The workbook's bytes of a header and ``count`` rows of cells, a few thousand rows at a
    time."""
    letters = [column_letter(index + 1) for index in range(len(columns))]
    span = f"A1:{letters[-1]}{count + 1}"
    absolute_span = f"$A$1:${letters[-1]}${count + 1}"
    result_at = columns.index(col.RESULT)
    source = iter(rows)
    out = _Chunks()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as package:
        package.writestr("[Content_Types].xml", _CONTENT_TYPES)
        package.writestr("_rels/.rels", _PACKAGE_RELS)
        package.writestr(
            "xl/workbook.xml",
            _HEAD + f'<workbook xmlns="{_MAIN}" xmlns:r="{_OFFICE}">'
            f'<sheets><sheet name="{SHEET_TITLE}" sheetId="1" r:id="rId1"/></sheets>'
            '<definedNames><definedName name="_xlnm._FilterDatabase" localSheetId="0" '
            f"hidden=\"1\">'{SHEET_TITLE}'!{absolute_span}</definedName></definedNames>"
            "</workbook>",
        )
        package.writestr("xl/_rels/workbook.xml.rels", _WORKBOOK_RELS)
        package.writestr("xl/styles.xml", _STYLES)
        with package.open("xl/worksheets/sheet1.xml", "w") as sheet:
            sheet.write(
                (
                    _HEAD + f'<worksheet xmlns="{_MAIN}"><dimension ref="{span}"/>'
                    '<sheetViews><sheetView workbookViewId="0">'
                    '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>'
                    '<selection pane="bottomLeft" activeCell="A2" sqref="A2"/>'
                    "</sheetView></sheetViews><sheetData>"
                    + _row(1, columns, letters, _HEADER_STYLE)
                ).encode()
            )
            written = 0
            while chunk := [
                _row(written + offset + 2, values, letters, _ROW_STYLES.get(values[result_at], 0))
                for offset, values in enumerate(islice(source, _ROWS_PER_WRITE))
            ]:
                written += len(chunk)
                sheet.write("".join(chunk).encode())
                yield out.take()
            sheet.write(f'</sheetData><autoFilter ref="{span}"/></worksheet>'.encode())
    yield out.take()


def write_xlsx(table: CompareTable, rows: Iterable[int], path: Path) -> None:
    def write(temporary: Path) -> None:
        with temporary.open("wb") as handle:
            for chunk in xlsx_chunks(table, rows):
                handle.write(chunk)

    write_atomically(path, write)
