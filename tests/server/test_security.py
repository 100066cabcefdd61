"""Only files under the data dir; viewing never writes; headers; hostile input."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import pytest
from fastapi.testclient import TestClient
from served_files import Q

from ci_support import live_server, viewer_bearer
from graphboard.server.app import create_app
from graphboard.server.paths import InvalidGraphId, UnknownGraph, resolve_graph
from graphboard.server.settings import Settings


@pytest.fixture
def outside(tmp_path: Path, data_dir: Path) -> Path:
    """A valid .vis.db outside the data dir."""
    secret = tmp_path / "outside" / "secret.vis.db"
    secret.parent.mkdir()
    shutil.copyfile(data_dir / "ours/convnet-stats.vis.db", secret)
    return secret


@pytest.fixture
def linked_client(tmp_path: Path, data_dir: Path, outside: Path) -> Iterator[TestClient]:
    root = tmp_path / "served"
    (root / "runs").mkdir(parents=True)
    shutil.copyfile(data_dir / "ours/convnet-stats.vis.db", root / "runs/real.vis.db")
    (root / "runs/leak.vis.db").symlink_to(outside)  # a file symlink leading out
    (root / "linkdir").symlink_to(outside.parent, target_is_directory=True)  # a folder link out
    (root / "runs/alias.vis.db").symlink_to(root / "runs/real.vis.db")  # a link that stays inside
    with TestClient(create_app(Settings(data_dir=root))) as client:
        yield client


@pytest.mark.parametrize(
    "raw_path",
    [
        "/api/graphs/%2e%2e/%2e%2e/etc/passwd/children",
        "/api/graphs/..%2f..%2fetc%2fpasswd/children",
        "/api/graphs/ours/%2e%2e/%2e%2e/outside/secret/children",
        "/api/graphs/%2Ftmp%2Fsecret/children",
        "/api/graphs//tmp/secret/children",
        "/api/graphs/ours%5c..%5c..%5csecret/children",
        "/api/graphs/.graphboard/catalog/children",
        "/api/graphs/ours/%2e/convnet-stats/children",
        "/api/graphs/ours/convnet-stats%00/children",
        "/api/graphs/%252e%252e/secret/children",
    ],
)
def test_path_traversal_is_refused(client: TestClient, raw_path: str) -> None:
    response = client.get(raw_path, params=Q)
    assert response.status_code in (404, 422), response.text
    assert response.json()["error"]["code"] in ("invalid_graph_id", "unknown_graph", "not_found")


def test_symlinks_leading_out_are_neither_listed_nor_served(linked_client: TestClient) -> None:
    listed = {entry["id"] for entry in linked_client.get("/api/graphs").json()["files"]}
    assert listed == {"runs/real", "runs/alias"}
    assert linked_client.get("/api/graphs/runs/leak/children", params=Q).status_code == 404
    assert linked_client.get("/api/graphs/linkdir/secret/children", params=Q).status_code == 404
    assert linked_client.get("/api/graphs/runs/alias/children", params=Q).status_code == 200


def test_resolve_graph_rules(tmp_path: Path, outside: Path) -> None:
    root = tmp_path.resolve()
    for bad in ("", "/etc/passwd", "a/../b", "a//b", "./a", ".hidden/x", "a\\b", "C:/x", "x\x00"):
        with pytest.raises(InvalidGraphId):
            resolve_graph(root, bad)
    with pytest.raises(UnknownGraph):
        resolve_graph(root / "nothing", "x")
    assert resolve_graph(outside.parent, "secret") == outside.resolve()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_viewing_never_writes_to_the_data(client: TestClient, data_dir: Path) -> None:
    before = {path: _digest(path) for path in data_dir.rglob("*.vis.db")}
    for graph in ("ours/convnet-stats", "msprobe/convnet-stats", "msprobe/layer-mapping"):
        client.get(f"/api/graphs/{graph}/children", params=Q)
        client.get(f"/api/graphs/{graph}/node", params={**Q, "name": "Functional.conv2d.0.forward"})
        client.get(f"/api/graphs/{graph}/search", params={**Q, "q": "conv"})
        client.get(f"/api/graphs/{graph}/filter", params={**Q, "unmatched": True})
        client.get(f"/api/graphs/{graph}/matches", params={"step": 0, "rank": 0})
    client.get("/api/graphs")
    assert {path: _digest(path) for path in data_dir.rglob("*.vis.db")} == before
    side_files = [p for p in data_dir.rglob("*") if p.name.endswith(("-wal", "-shm", "-journal"))]
    assert side_files == []


def test_a_wal_mode_file_is_read_without_creating_wal_files(tmp_path: Path, data_dir: Path) -> None:
    root = tmp_path / "wal"
    root.mkdir()
    target = root / "msprobe-style.vis.db"
    shutil.copyfile(data_dir / "msprobe/convnet-stats.vis.db", target)
    with sqlite3.connect(target) as conn:  # as msprobe leaves its files
        assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    assert not (root / "msprobe-style.vis.db-wal").exists()
    os.chmod(root, 0o555)  # a reader that tried to create -wal/-shm here would fail
    try:
        settings = Settings(data_dir=root, state_dir=tmp_path / "state")
        with TestClient(create_app(settings)) as client:
            response = client.get("/api/graphs/msprobe-style/children", params=Q)
            assert response.status_code == 200, response.text
            assert (
                client.get("/api/graphs/msprobe-style/search", params={**Q, "q": "relu"}).json()[
                    "total"
                ]
                > 0
            )
        assert sorted(path.name for path in root.iterdir()) == ["msprobe-style.vis.db"]
    finally:
        os.chmod(root, 0o755)


def test_a_read_only_data_dir_keeps_state_elsewhere(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ro"
    root.mkdir()
    shutil.copyfile(data_dir / "msprobe/layer-mapping.vis.db", root / "m.vis.db")
    real_access = os.access
    # As for a read-only mount (permission bits alone do not stop root, who runs CI).
    monkeypatch.setattr(
        os,
        "access",
        lambda path, mode: (
            False if Path(path) == root and mode == os.W_OK else real_access(path, mode)
        ),
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-home"))
    settings = Settings(data_dir=root)
    assert settings.state_root.is_relative_to(tmp_path / "cache-home")
    with TestClient(create_app(settings)) as client:
        assert client.get("/api/graphs/m/children", params=Q).status_code == 200
    assert sorted(path.name for path in root.iterdir()) == ["m.vis.db"]
    assert list((tmp_path / "cache-home").rglob("*.columns.db"))


def test_security_headers_on_every_response(client: TestClient) -> None:
    for response in (
        client.get("/api/graphs"),
        client.get("/api/graphs/ours/convnet-stats/children", params=Q),
        client.get("/api/graphs/nope/children", params=Q),
        client.get("/api/graphs/ours/convnet-stats/children", params={"side": "x"}),
    ):
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"
        assert "default-src 'self'" in response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["referrer-policy"] == "no-referrer"
    docs = client.get("/docs")
    assert "cdn.jsdelivr.net" in docs.headers["content-security-policy"]


def test_node_names_are_bound_not_spliced(client: TestClient) -> None:
    for name in ("' OR 1=1 --", '"; DROP TABLE tb_nodes; --', "%", "_", "DefaultModel' --"):
        response = client.get("/api/graphs/ours/convnet-stats/node", params={**Q, "name": name})
        assert response.status_code == 404
    assert (
        client.get("/api/graphs/ours/convnet-stats/search", params={**Q, "q": "%"}).json()["total"]
        == 0
    )
    assert client.get("/api/graphs/ours/convnet-stats/children", params=Q).status_code == 200


# --- numbers too large for SQLite (issue 16, item 4) --------------------------------------

TOO_LARGE = 2**63  # one past SQLite's largest integer
INDEX_PARAMETERS = ("step", "rank", "cursor", "micro_step")
NODE = "Module.classifier.0.Linear.forward.0"
GOLDEN_NODE = "Module.head.0.Linear.forward.0"
# where the first enum values would make a request invalid before the number is read
VALID_CHOICES = {"heatmap": {"rows": "module", "cols": "pass", "step": 0, "rank": 0}}
OWN_CHECKS = {"heatmap"}  # routes that name the file's steps and ranks in their own 422


def _filler(spec: dict[str, Any], parameter: dict[str, Any]) -> Any:
    """A valid value for a required query parameter, from its OpenAPI schema."""
    schema = parameter.get("schema", {})
    for option in schema.get("anyOf", [schema]):
        if "$ref" in option:
            option = spec["components"]["schemas"][option["$ref"].rsplit("/", 1)[1]]
        if "enum" in option:
            return option["enum"][0]
        if option.get("type") == "integer":
            return 0
        if option.get("type") == "boolean":
            return "false"
    return {"target": NODE, "golden": GOLDEN_NODE}.get(parameter["name"], "DefaultModel")


def _index_operations(spec: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(method, path, parameter, the other required parameters) of every operation of the
    graph API taking a step, rank, cursor or micro step in its query."""
    found = []
    for path, operations in spec["paths"].items():
        if not path.startswith("/api/graphs/{graph}/"):
            continue
        for method, operation in operations.items():
            query = [p for p in operation.get("parameters", []) if p["in"] == "query"]
            required = {p["name"]: _filler(spec, p) for p in query if p.get("required")}
            required.setdefault("side", "NPU")
            required.update(VALID_CHOICES.get(path.rsplit("/", 1)[1], {}))
            for parameter in query:
                if parameter["name"] in INDEX_PARAMETERS:
                    url = path.replace("{graph}", "ours/layer-mapping")
                    found.append((method.upper(), url, parameter["name"], required))
    return found


def test_numbers_past_sqlite_integers_are_422_everywhere(fresh_data_dir: Path) -> None:
    with (
        live_server(Settings(data_dir=fresh_data_dir)) as base,
        httpx.Client(base_url=base, timeout=30, headers=viewer_bearer(base)) as http,
    ):
        operations = _index_operations(http.get("/openapi.json").json())
        routes = {(method, url.rsplit("/", 1)[1]) for method, url, _p, _r in operations}
        assert {("GET", "children"), ("GET", "search"), ("DELETE", "matches")} <= routes
        assert {("POST", "undo"), ("POST", "vis-config"), ("GET", "peers")} <= routes
        for method, url, parameter, required in operations:
            for value in (TOO_LARGE, 10**30):
                params = {**required, parameter: value}
                if url.endswith("/search"):
                    params["q"] = "linear"
                body = {} if url.endswith("vis-config") and method == "POST" else None
                response = http.request(method, url, params=params, json=body)
                assert response.status_code == 422, (method, url, parameter, response.text)
                error = response.json()["error"]
                if url.rsplit("/", 1)[1] in OWN_CHECKS and error["code"] != "invalid_parameters":
                    assert f"{parameter}={value}" in error["message"]
                    continue
                assert error["code"] == "invalid_parameters"
                assert ["query", parameter] in [item["location"] for item in error["details"]]
            # the largest integer SQLite holds is a number like any other: no graph has it
            largest = http.request(
                method,
                url,
                params={**required, "q": "linear", parameter: TOO_LARGE - 1},
                json={} if url.endswith("vis-config") and method == "POST" else None,
            )
            assert largest.status_code != 500, (method, url, parameter, largest.text)
            assert http.get("/api/graphs/ours/layer-mapping/config").status_code == 200
        for field in ("step", "rank"):
            body = {"step": 0, "rank": 0, "target": NODE, "golden": GOLDEN_NODE, field: TOO_LARGE}
            posted = http.post("/api/graphs/ours/layer-mapping/matches", json=body)
            assert posted.status_code == 422, posted.text
            details = posted.json()["error"]["details"]
            assert ["body", field] in [item["location"] for item in details]
            largest = http.post(
                "/api/graphs/ours/layer-mapping/matches", json={**body, field: TOO_LARGE - 1}
            )
            assert largest.status_code == 404, largest.text
        children = http.get("/api/graphs/ours/layer-mapping/children", params=Q)
        assert children.status_code == 200


# --- download names (issue 16, item 5) -----------------------------------------------------


# (the download, its file name after the graph's stem)
DOWNLOADS = [("matches/vis-config", "_0_0.vis.config"), ("table-export", "_step0_rank0.csv")]


@pytest.mark.parametrize(("download", "suffix"), DOWNLOADS)
@pytest.mark.parametrize("stem", ["模型对比", 'say "hi"', "naïve run;x=1"])
def test_download_names_round_trip(
    tmp_path: Path, data_dir: Path, stem: str, download: str, suffix: str
) -> None:
    root = tmp_path / "served"
    root.mkdir()
    shutil.copyfile(data_dir / "ours/layer-mapping.vis.db", root / f"{stem}.vis.db")
    with TestClient(create_app(Settings(data_dir=root))) as client:
        graph = quote(stem, safe="")
        response = client.get(f"/api/graphs/{graph}/{download}", params=Q)
        assert response.status_code == 200, response.text
        header = response.headers["content-disposition"]
        assert header.isascii()
        parsed = EmailMessage()  # the header is well formed: one disposition, one fallback
        parsed["content-disposition"] = header
        assert parsed.get_content_disposition() == "attachment"
        fallback = parsed.get_param("filename", header="content-disposition")
        assert (
            isinstance(fallback, str)
            and fallback.isascii()
            and len(fallback) == len(f"{stem}{suffix}")
        )
        assert _extended_filename(header) == f"{stem}{suffix}"


def _extended_filename(header: str) -> str:
    """The ``filename*`` of a Content-Disposition (RFC 5987: charset''percent-encoded)."""
    (value,) = [
        part.strip().removeprefix("filename*=")
        for part in header.split(";")
        if part.strip().startswith("filename*=")
    ]
    charset, _language, encoded = value.split("'", 2)
    assert charset.upper() == "UTF-8" and encoded.isascii() and '"' not in encoded
    return unquote(encoded, encoding="utf-8", errors="strict")
