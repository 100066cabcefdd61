"""Cells a spreadsheet would run as formulas, made inert (OWASP's "CSV Injection" rule).

A spreadsheet opening a CSV reads a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula (``-2+3`` is 1, ``=HYPERLINK(...)`` a live link, ``@SUM(...)`` Lotus syntax), and
a leading tab or carriage return is dropped before that reading, so ``\\t=1`` runs too. Node
names come from dumps anyone may upload, so any of them can start that way. OWASP's remedy
is a leading single quote: the spreadsheet shows the text as it is and runs nothing.

A number is not a formula: ``-0.25`` or ``+1e-05`` stays as written, so it stays a number
in the sheet. Only text that a decimal-number pattern does not take whole gets the quote
(``-inf``, ``-nan`` and ``-`` included: a spreadsheet would read them as formulas that fail).
XLSX needs none of this: its cells are written as inline strings, which a sheet never
evaluates (:mod:`graphboard.table.export_xlsx`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")


def inert_cell(cell: str) -> str:
    """``cell`` as a spreadsheet shows it without running it: quoted when it would be a formula."""
    if cell.startswith(FORMULA_STARTS) and _NUMBER.fullmatch(cell) is None:
        return "'" + cell
    return cell


def inert_row(cells: Sequence[str]) -> list[str]:
    return [inert_cell(cell) for cell in cells]
