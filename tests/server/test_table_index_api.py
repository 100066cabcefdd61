"""The table's pages over HTTP as the row index makes them: the whole table's rows, a total
that counts them, nothing past the end, and a user's pairing followed at once."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from graphboard.store.reader import open_vis_db
from graphboard.table.cell_safety import inert_row
from graphboard.table.columns import RESULT, STARTS_HERE
from graphboard.table.pages import indexed_select, indexed_table, rows_at
from graphboard.table.query import select
from graphboard.table.rows import build_table

GRAPH = "ours/layer-mapping"
AT = {"step": 0, "rank": 0}
# a pair of unlike layers (the classifier's first Linear and the head's last): rescored, its
# rows no longer pass, so the index must read the user's dicts, not the stored ones
UNLIKE = ("Module.classifier.0.Linear.forward.0", "Module.head.3.Linear.forward.0")
REQUESTS: list[dict[str, Any]] = [
    {},
    {"sort": RESULT},
    {"sort": RESULT, "descending": True},
    {"sort": STARTS_HERE},
    {"result": ["error", "warning"]},
    {"result": ["pass"], "sort": RESULT, "descending": True},
]


def every_row(client: TestClient, **params: Any) -> list[tuple[str, list[str]]]:
    rows: list[tuple[str, list[str]]] = []
    cursor = 0
    while True:
        reply = client.get(
            f"/api/graphs/{GRAPH}/table", params={**AT, **params, "limit": 40, "cursor": cursor}
        )
        assert reply.status_code == 200, reply.text
        page = reply.json()
        rows += [(item["node"], item["cells"]) for item in page["items"]]
        if page["next_cursor"] is None:
            assert page["total"] == len(rows)
            return rows
        cursor = page["next_cursor"]


def whole_rows(path: Path, cache: Path, **params: Any) -> list[tuple[str, list[str]]]:
    with open_vis_db(path, cache) as db:
        table = build_table(db, 0, 0)
    shown = select(
        table,
        results=params.get("result", ()),
        sort=params.get("sort"),
        descending=params.get("descending", False),
    )
    return [(table.nodes[row], list(table.cells[row])) for row in map(int, shown)]


def test_pages_are_the_whole_table_and_follow_a_pairing(
    fresh_client: TestClient, fresh_data_dir: Path, tmp_path: Path
) -> None:
    path = fresh_data_dir / f"{GRAPH}.vis.db"
    before = every_row(fresh_client)  # the index is made and cached
    assert before == whole_rows(path, tmp_path)
    total = len(before)
    past = fresh_client.get(
        f"/api/graphs/{GRAPH}/table", params={**AT, "limit": 40, "cursor": total + 3}
    ).json()
    assert past["items"] == [] and past["next_cursor"] is None and past["total"] == total

    matched = fresh_client.post(
        f"/api/graphs/{GRAPH}/matches", json={**AT, "target": UNLIKE[0], "golden": UNLIKE[1]}
    )
    assert matched.status_code == 200, matched.text
    assert every_row(fresh_client) != before  # the pairing rescored the classifier's rows
    assert every_row(fresh_client, result=["error", "warning"])
    for request in REQUESTS:
        assert every_row(fresh_client, **request) == whole_rows(path, tmp_path, **request), request
    # and from the index itself, not from the whole table standing in for it
    with open_vis_db(path, tmp_path) as db:
        indexed = indexed_table(db, 0, 0)
        assert indexed is not None
        for request in REQUESTS:
            shown = indexed_select(
                indexed,
                results=request.get("result", ()),
                sort=request.get("sort"),
                descending=request.get("descending", False),
            )
            assert shown is not None
            made = [(node, list(cells)) for node, cells in rows_at(indexed, shown)]
            assert made == whole_rows(path, tmp_path, **request), request


def test_downloads_hold_the_rows_shown_by_either_path(client: TestClient) -> None:
    """A download from the index (a metric sort) and one from the whole table (a golden's
    statistic) each hold the rows their pages show, in that order."""
    graph = "ours/convnet-stats"
    views: list[dict[str, str | bool]] = [
        {"sort": "MaxRelativeErr", "descending": True},
        {"sort": "Bench max"},
    ]
    for shown in views:
        pages = client.get(
            f"/api/graphs/{graph}/table", params={**AT, **shown, "limit": 1000}
        ).json()
        reply = client.get(f"/api/graphs/{graph}/table-export", params={**AT, **shown})
        assert reply.status_code == 200, reply.text
        lines = list(csv.reader(io.StringIO(reply.text)))
        assert lines[0] == pages["columns"]
        assert lines[1:] == [inert_row(item["cells"]) for item in pages["items"]]
        assert len(lines) - 1 == pages["total"] > 300
