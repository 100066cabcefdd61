"""The compare table over HTTP: pages with a cursor, filters by Result and name, a sort by
any column, and the rows shown as CSV or XLSX; graphboard's files and msprobe's."""

from __future__ import annotations

import csv
import io
from typing import Any

import openpyxl
import pytest
from fastapi.testclient import TestClient

from graphboard.table.query import sort_key

TABLE = "/api/graphs/{}/table"
EXPORT = "/api/graphs/{}/table-export"
AT = {"step": 0, "rank": 0}


def every_row(client: TestClient, graph: str, **params: Any) -> tuple[list[str], list[Any]]:
    """(columns, every row) by following next_cursor through pages of 50."""
    rows: list[Any] = []
    cursor = None
    while True:
        query = {**AT, "limit": 50, **params}
        if cursor is not None:
            query["cursor"] = cursor
        reply = client.get(TABLE.format(graph), params=query)
        assert reply.status_code == 200, reply.text
        page = reply.json()
        assert len(page["items"]) <= 50
        rows += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            assert page["total"] == len(rows)
            return page["columns"], rows


@pytest.mark.parametrize("graph", ["ours/convnet-stats", "msprobe/convnet-stats"])
def test_pages_hold_every_row_once(client: TestClient, graph: str) -> None:
    columns, rows = every_row(client, graph)
    assert columns[:2] == ["NPU Name", "Bench Name"] and columns[-1] == "Divergence Starts Here"
    names = [row["cells"][0] for row in rows]
    assert len(names) == len(set(names)) > 300
    for row in rows:
        assert row["cells"][0].startswith(row["node"] + ".")  # the node to open in the tree


def test_filters_by_result_and_by_name(client: TestClient) -> None:
    graph = "ours/convnet-stats"
    columns, warned = every_row(client, graph, result=["warning"])
    result_at = columns.index("Result")
    assert len(warned) == 9 and {row["cells"][result_at] for row in warned} == {"warning"}
    _columns, flagged = every_row(client, graph, result=["warning", "error"])
    assert len(flagged) == 10
    _columns, gelu = every_row(client, graph, name="GeLu")
    assert gelu and all("gelu" in row["cells"][0].lower() for row in gelu)
    _columns, both = every_row(client, graph, name="gelu", result=["error"])
    assert [row["cells"][0] for row in both] == ["Functional.gelu.0.forward.input.approximate"]
    _columns, literal = every_row(client, graph, name=".*")  # a substring, never a regex
    assert literal == []
    _columns, across = every_row(client, graph, name="input.0\nFunctional")  # no name spans two
    assert across == []


def test_sorts_by_any_column_numbers_numerically(client: TestClient) -> None:
    columns, rows = every_row(client, "ours/convnet-stats", sort="NormRelativeErr", descending=True)
    at = columns.index("NormRelativeErr")
    keys = [sort_key(row["cells"][at]) for row in rows]
    # Largest number first, the text cells (N/A) after every number.
    assert keys == sorted(keys, key=lambda key: (key[0], -key[1], key[2]))
    assert keys[0][0] == 0 and keys[-1][0] == 1
    cells = [row["cells"][at] for row in rows]
    assert cells != sorted(cells, reverse=True)  # "8.4e-06%" below "0.01%": not text order
    _columns, by_name = every_row(client, "ours/convnet-stats", sort="NPU Name")
    assert [row["cells"][0] for row in by_name] == sorted(row["cells"][0] for row in rows)


def test_bad_requests_say_what_is_wrong(client: TestClient) -> None:
    graph = "ours/convnet-stats"
    reply = client.get(TABLE.format(graph), params={**AT, "sort": "Colour"})
    assert reply.status_code == 422 and reply.json()["error"]["code"] == "unknown_column"
    reply = client.get(TABLE.format(graph), params={**AT, "limit": 10**6})
    assert reply.status_code == 422 and "limit" in reply.json()["error"]["message"]
    reply = client.get(TABLE.format(graph), params={**AT, "result": "fine"})
    assert reply.status_code == 422
    reply = client.get(TABLE.format(graph), params={"step": 0, "rank": 7})
    assert reply.status_code == 404 and "no graph for step 0, rank 7" in reply.text
    reply = client.get(TABLE.format("ours/convnet-overflow"), params=AT)
    assert reply.status_code == 404 and reply.json()["error"]["code"] == "no_table"


def test_csv_download_holds_the_rows_shown(client: TestClient) -> None:
    graph = "ours/convnet-stats"
    shown = {"result": ["warning", "error"], "sort": "Max diff"}
    columns, rows = every_row(client, graph, **shown)
    reply = client.get(EXPORT.format(graph), params={**AT, **shown, "format": "csv"})
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/csv")
    assert "convnet-stats_step0_rank0.csv" in reply.headers["content-disposition"]
    lines = list(csv.reader(io.StringIO(reply.text)))
    assert lines[0] == columns
    assert lines[1:] == [row["cells"] for row in rows]


def test_xlsx_download_holds_the_rows_shown(client: TestClient) -> None:
    graph = "msprobe/convnet-stats"
    columns, rows = every_row(client, graph, name="relu")
    reply = client.get(EXPORT.format(graph), params={**AT, "name": "relu", "format": "xlsx"})
    assert reply.status_code == 200
    sheet = openpyxl.load_workbook(io.BytesIO(reply.content)).active
    got = [[cell.value or "" for cell in row] for row in sheet.iter_rows()]
    assert got[0] == columns
    assert got[1:] == [row["cells"] for row in rows]
    assert sheet.freeze_panes == "A2"
