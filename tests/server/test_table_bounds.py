"""The compare table's stores are bounded (issue 30, point 5): the table cache by bytes (a
table past the budget refused as it is crossed), downloads streamed without a temporary file
and bounded in number, a killed export's part file cleared by the next."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
from fastapi.testclient import TestClient

from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from graphboard.store.graph_views import ViewCache
from graphboard.store.reader import open_vis_db
from graphboard.table.query import table_bytes
from graphboard.table.rows import CompareTable, build_table

GRAPH = "ours/convnet-stats"
Q = {"step": 0, "rank": 0}


def held_bytes(table: CompareTable) -> int:
    """What the rows hold, as CPython measures it (each shared string once)."""
    seen: set[int] = set()
    total = sys.getsizeof(table.cells) + sys.getsizeof(table.nodes)
    for cells in table.cells:
        total += sys.getsizeof(cells)
        for cell in cells:
            if id(cell) not in seen:
                seen.add(id(cell))
                total += sys.getsizeof(cell)
    return total


@pytest.fixture
def tables(fresh_data_dir: Path, tmp_path: Path) -> list[CompareTable]:
    found = []
    for graph in (GRAPH, "ours/layer-mapping"):
        with open_vis_db(fresh_data_dir / f"{graph}.vis.db", tmp_path) as db:
            found.append(build_table(db, 0, 0))
    return found


def test_tables_are_weighed_in_bytes(tables: list[CompareTable]) -> None:
    for table in tables:
        actual = held_bytes(table)
        assert actual <= table.bytes <= 2 * actual, (table.bytes, actual)  # errs high only
    first, second = tables
    cache: ViewCache[CompareTable] = ViewCache(
        max_nodes=first.bytes + second.bytes - 1, weigh=table_bytes
    )
    cache.get(("first",), lambda: first)
    assert cache.get(("first",), lambda: second) is first  # cached
    cache.get(("second",), lambda: second)  # over the budget: the least recent goes
    assert cache.get(("first",), lambda: second) is second


def test_a_table_past_the_budget_is_refused_as_it_is_crossed(fresh_data_dir: Path) -> None:
    """A sort by a golden's statistic or by name needs the whole table: past the budget it
    is refused, saying what needed it; the table's own order, the errors-first view, a sort
    by a metric and a name filter page from its row index, whatever the budget."""
    settings = Settings(data_dir=fresh_data_dir, table_cache_bytes=20_000)
    with TestClient(create_app(settings)) as client:
        for url in ("table", "table-export"):
            for needs, query in (
                ("a sort by Bench max", {"sort": "Bench max"}),
                ("a sort by NPU Name", {"sort": "NPU Name"}),
            ):
                response = client.get(f"/api/graphs/{GRAPH}/{url}", params={**Q, **query})
                assert response.status_code == 503, response.text
                error = response.json()["error"]
                assert error["code"] == "table_too_large"
                assert error["message"].startswith("convnet-stats.vis.db: the table of step 0")
                assert f"{needs} needs the whole table" in error["message"]
                assert "graphboard table" in error["message"]
            for query in (
                {},
                {"sort": "Result"},
                {"result": "error"},
                {"sort": "MaxRelativeErr"},
                {"name": "relu"},
            ):
                response = client.get(f"/api/graphs/{GRAPH}/{url}", params={**Q, **query})
                assert response.status_code == 200, response.text


@pytest.fixture
def client(fresh_data_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(data_dir=fresh_data_dir, max_exports=2))) as served:
        yield served


def test_downloads_stream_without_a_file_and_are_bounded(client: TestClient) -> None:
    before = set(Path(tempfile.gettempdir()).glob("graphboard-table-*"))
    url = f"/api/graphs/{GRAPH}/table-export"
    with (
        client.stream("GET", url, params=Q) as first,
        client.stream("GET", url, params=Q) as second,
    ):
        assert first.status_code == second.status_code == 200
        assert "content-length" not in first.headers  # streamed, not a file sent whole
        third = client.get(url, params=Q)
        assert third.status_code == 503, third.text
        assert third.json()["error"]["code"] == "too_many_exports"
        assert third.headers["retry-after"] == "10"
        text = b"".join(first.iter_bytes()).decode()
        assert text.startswith("NPU Name,") and text.count("\n") > 100
    assert set(Path(tempfile.gettempdir()).glob("graphboard-table-*")) == before
    # both slots are back: the one read to its end and the one dropped unread
    for _again in range(3):
        assert client.get(url, params=Q).status_code == 200
    xlsx = client.get(url, params={**Q, "format": "xlsx"})
    assert xlsx.status_code == 200
    out = Path(tempfile.mkdtemp()) / "t.xlsx"
    out.write_bytes(xlsx.content)
    sheet = openpyxl.load_workbook(out).active
    assert sheet.max_row == text.count("\n")  # the same rows, header included


def test_a_killed_exports_part_file_is_cleared_by_the_next(
    tmp_path: Path, fresh_data_dir: Path
) -> None:
    out = tmp_path / "t.csv"
    # a process that dies by SIGKILL mid-export leaves its part file under its pid
    dead = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    leftover = tmp_path / f".t.csv.{dead.pid}.part"
    leftover.write_bytes(b"x" * 1000)
    dead.send_signal(signal.SIGKILL)
    dead.wait()
    running = tmp_path / f".t.csv.{os.getpid()}.part"  # an export still running: kept
    running.write_bytes(b"y")
    graphboard = str(Path(sys.executable).with_name("graphboard"))
    done = subprocess.run(
        [graphboard, "table", str(fresh_data_dir / f"{GRAPH}.vis.db"), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert out.exists() and not leftover.exists()
    assert running.exists()
