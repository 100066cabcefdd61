"""GET /api/graphs and /api/graphs/{graph}/config: every .vis.db under the data dir."""

from __future__ import annotations

import shutil
from pathlib import Path

from fastapi.testclient import TestClient
from served_files import MSPROBE_FILES, NODE_ROUTES, OUR_BUILDS, Q
from sqlalchemy import select

from graphboard.server.catalog.models import KnownGraph
from graphboard.server.settings import Settings


def _files(client: TestClient) -> dict[str, dict]:
    response = client.get("/api/graphs")
    assert response.status_code == 200
    return {entry["id"]: entry for entry in response.json()["files"]}


def test_lists_every_file_ours_and_msprobes_with_its_config(client: TestClient) -> None:
    files = _files(client)
    assert set(files) == set(OUR_BUILDS) | set(MSPROBE_FILES)
    for graph_id, entry in files.items():
        assert entry["error"] is None, entry["error"]
        assert entry["path"] == graph_id + ".vis.db"
        assert entry["source"] == ("graphboard" if graph_id.startswith("ours/") else "msprobe")
    stats = files["ours/convnet-stats"]
    assert stats["config"]["graph_type"] == "compare"
    assert stats["config"]["data_mode"] == "summary"
    assert stats["config"]["overflow_check"] is True
    assert stats["config"]["ranks"] == [0] and stats["config"]["steps"] == [0]
    assert "#C7C7C7" in stats["config"]["node_colors"]
    assert [(g["side"], g["step"], g["rank"]) for g in stats["graphs"]] == [
        ("target", 0, 0),
        ("golden", 0, 0),
    ]
    assert stats["matched"] == stats["graphs"][0]["matched"]
    ddp = files["ours/convnet-ddp2"]
    assert ddp["config"]["ranks"] == [0, 1] and ddp["config"]["steps"] == [0, 1]
    assert len(ddp["graphs"]) == 8
    build = files["msprobe/convnet-overflow"]
    assert build["config"]["graph_type"] == "build"
    assert build["matched"] is None and build["writable"] is False
    mapping = files["msprobe/layer-mapping"]
    assert mapping["unmatched"] == 27  # msprobe leaves the renamed modules and their APIs grey
    assert files["msprobe/deep/resnet50-build"]["config"]["steps"] == [0, 1]


def test_a_file_added_later_is_listed_without_a_restart(
    fresh_client: TestClient, fresh_data_dir: Path
) -> None:
    before = _files(fresh_client)
    (fresh_data_dir / "late").mkdir()
    shutil.copyfile(
        fresh_data_dir / "ours/layer-mapping.vis.db", fresh_data_dir / "late/new.vis.db"
    )
    after = _files(fresh_client)
    assert set(after) == set(before) | {"late/new"}
    children = fresh_client.get("/api/graphs/late/new/children", params=Q)
    assert children.status_code == 200


def test_an_unreadable_file_is_listed_with_the_reason(
    fresh_client: TestClient, fresh_data_dir: Path
) -> None:
    (fresh_data_dir / "junk.vis.db").write_bytes(b"not a database at all" * 10)
    files = _files(fresh_client)
    assert "not an SQLite database" in files["junk"]["error"]
    assert files["ours/layer-mapping"]["error"] is None
    response = fresh_client.get("/api/graphs/junk/children", params=Q)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "unreadable_file"


def test_the_catalog_records_known_graphs(fresh_client: TestClient, fresh_data_dir: Path) -> None:
    _files(fresh_client)
    (fresh_data_dir / "ours/convnet-stats.vis.db").unlink()
    _files(fresh_client)
    catalog = fresh_client.app.state.catalog  # type: ignore[attr-defined]
    with catalog.session() as session:
        rows = {row.graph_id: row for row in session.scalars(select(KnownGraph))}
    assert rows["ours/layer-mapping"].present and rows["ours/layer-mapping"].source == "graphboard"
    assert rows["msprobe/layer-mapping"].source == "msprobe"
    assert rows["ours/convnet-stats"].present is False
    settings: Settings = fresh_client.app.state.settings  # type: ignore[attr-defined]
    assert (settings.state_root / "catalog.db").is_file()


def test_config_of_one_file(client: TestClient) -> None:
    response = client.get("/api/graphs/msprobe/deep/resnet50-build/config")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == "msprobe/deep/resnet50-build"
    assert [g["step"] for g in body["graphs"]] == [0, 1]
    missing = client.get("/api/graphs/msprobe/nothing/config")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "unknown_graph"


def test_openapi_documents_every_route(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    paths = set(schema["paths"])
    for suffix in (
        *NODE_ROUTES,
        "matches/undo",
        "matches/history",
        "matches/vis-config",
        "config",
    ):
        assert f"/api/graphs/{{graph}}/{suffix}" in paths
    assert client.get("/docs").status_code == 200


def test_openapi_names_each_model_once(client: TestClient) -> None:
    """Two models of one name make FastAPI name both by their module path
    (graphboard__verdict__models__DiagnosisOut): a client generator's names would follow."""
    names = client.get("/openapi.json").json()["components"]["schemas"]
    assert [name for name in names if "__" in name] == []
