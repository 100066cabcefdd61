"""The monitor page's API on a real comparison (the 1-rank weights-scaled run against its
golden, compared by ``graphboard monitor``), served from a data dir."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from monitor_runs import FAULT_STEP, MonitorRuns

from graphboard.cli import graphboard_main
from graphboard.server.app import create_app
from graphboard.server.settings import Settings


@pytest.fixture(scope="module")
def client(
    monitor_runs: MonitorRuns, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    data = tmp_path_factory.mktemp("monitor-data")
    out = data / "runs"
    out.mkdir()
    code = graphboard_main(
        [
            "monitor",
            "-tp",
            str(monitor_runs.one_rank("scale")),
            "-gp",
            str(monitor_runs.one_rank("golden")),
            "-o",
            str(out),
        ]
    )
    assert code == 1  # a departure
    (written,) = out.glob("*.trend.db")
    shutil.move(written, out / "scale.trend.db")
    with TestClient(create_app(Settings(data_dir=data))) as test_client:
        yield test_client


def test_files_report_and_heatmap(client: TestClient, monitor_runs: MonitorRuns) -> None:
    files = client.get("/api/monitor").json()["files"]
    assert [f["id"] for f in files] == ["runs/scale"] and files[0]["size"] > 0
    answer = client.get("/api/monitor/runs/scale/report").json()
    first = answer["report"]["first_departure"]
    assert (first["step"], first["module"], first["metric"]) == (FAULT_STEP, "blocks.2.mlp", "actv")
    assert answer["statistics"] == ["norm", "min", "max", "mean"]
    # the runs lie outside the data dir: the answer names their folders, not the server's paths
    shown = (answer["report"]["target"], answer["report"]["golden"])
    assert shown == (monitor_runs.one_rank("scale").name, monitor_runs.one_rank("golden").name)
    grid = client.get(
        "/api/monitor/runs/scale/heatmap",
        params={"metric": "actv", "statistic": "norm", "side": "score", "rank": 0},
    ).json()
    assert grid["cols"] == list(range(50))
    row = grid["rows"].index("blocks.2.mlp.output")
    scores = grid["values"][row]
    assert all(score <= 1 for score in scores[:FAULT_STEP])  # nothing departs before step 20
    assert scores[FAULT_STEP] > 1
    earlier = grid["rows"].index("blocks.2.mlp.input")  # the MLP's input: unchanged at 20
    assert grid["values"][earlier][FAULT_STEP] <= 1
    series = grid["series"][row]
    lines = client.get(
        "/api/monitor/runs/scale/lines", params={"series": series, "statistic": "norm"}
    ).json()
    assert lines["target"][:FAULT_STEP] == lines["golden"][:FAULT_STEP]
    assert lines["target"][FAULT_STEP] != lines["golden"][FAULT_STEP]
    ranks = client.get(
        "/api/monitor/runs/scale/ranks", params={"series": series, "statistic": "norm"}
    ).json()
    assert ranks["rows"] == ["0"] and len(ranks["cols"]) == 50


def test_dump_config_download(client: TestClient) -> None:
    response = client.get("/api/monitor/runs/scale/dump-config")
    assert response.status_code == 200
    assert "attachment" in response.headers["content-disposition"]
    config = json.loads(response.text)
    assert config["step"] == [FAULT_STEP]
    assert config["statistics"]["list"][0] == "Module.blocks.2.mlp."


def test_bad_requests_are_refused(client: TestClient) -> None:
    assert client.get("/api/monitor/runs/nothing/report").status_code == 404
    bad = client.get(
        "/api/monitor/runs/scale/heatmap", params={"metric": "actv", "statistic": "bogus"}
    )
    assert bad.status_code == 422 and "bogus" in bad.json()["error"]["message"]
    assert client.get("/monitor").status_code == 200
