"""Writes need leave (issue 30, point 3): every write to a graph file takes a token, the one the
URL `graphboard serve` prints carries by default; a write from another site and a request with
a Host this server does not go by (DNS rebinding) are refused, token or not. The attacks are
the issue's: a plain HTML form posting undo from another origin, a rebinding request, writes
with no, a wrong and a revoked token."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from write_routes import GRAPH, PAIR, STEP_RANK, WRITES

from ci_support import free_port, live_server, viewer_bearer
from graphboard.server.app import create_app
from graphboard.server.catalog import Catalog, tokens
from graphboard.server.request_origin import HostNames, host_name
from graphboard.server.settings import Settings
from graphboard.server.viewer_token import viewer_token

FORGED_TOKEN = "gbt_0123456789ab_" + "A" * 43


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def app_client(fresh_data_dir: Path) -> Iterator[TestClient]:
    """A client with no token (what any process or page on the machine could send)."""
    with TestClient(create_app(Settings(data_dir=fresh_data_dir))) as client:
        yield client


def _write(client: TestClient, write: tuple[str, str, dict[str, Any], Any], **headers: str) -> Any:
    method, path, params, body = write
    return client.request(
        method, f"/api/graphs/{GRAPH}/{path}", params=params, json=body, headers=headers
    )


def test_writes_without_a_wrong_or_a_revoked_token_are_refused(
    app_client: TestClient, fresh_data_dir: Path
) -> None:
    file = fresh_data_dir / f"{GRAPH}.vis.db"
    before = _digest(file)
    token = app_client.app.state.viewer_token  # type: ignore[attr-defined]
    for write in WRITES:
        for headers, code in (
            ({}, "missing_token"),
            ({"Authorization": f"Bearer {FORGED_TOKEN}"}, "invalid_token"),
            ({"Authorization": f"Bearer {token}x"}, "invalid_token"),
            ({"Authorization": f"Basic {token}"}, "missing_token"),
        ):
            response = _write(app_client, write, **headers)
            assert response.status_code == 401, (write, headers, response.text)
            assert response.json()["error"]["code"] == code
            assert "token" in response.json()["error"]["message"]
    assert _digest(file) == before  # nothing written
    with app_client.app.state.catalog.session() as session:  # type: ignore[attr-defined]
        assert tokens.revoke(session, token)
    for write in WRITES:
        response = _write(app_client, write, Authorization=f"Bearer {token}")
        assert response.status_code == 401, (write, response.text)
        assert response.json()["error"]["code"] == "invalid_token"
    assert _digest(file) == before
    # reads stay open
    assert app_client.get(f"/api/graphs/{GRAPH}/matches", params=STEP_RANK).status_code == 200


def test_every_write_with_the_token_goes_through(app_client: TestClient) -> None:
    bearer = {"Authorization": f"Bearer {app_client.app.state.viewer_token}"}  # type: ignore[attr-defined]
    for write in WRITES:
        response = _write(app_client, write, **bearer)
        assert response.status_code == 200, (write, response.text)
    history = app_client.get(f"/api/graphs/{GRAPH}/matches/history", params=STEP_RANK).json()
    assert len(history["actions"]) >= 3


def test_a_form_on_another_site_cannot_undo(fresh_data_dir: Path) -> None:
    """The issue's attack: a page elsewhere holds ``<form method=post action=http://127.0.0.1:
    8000/api/graphs/.../matches/undo?step=0&rank=0>`` and submits it. The browser sends the
    Origin and Sec-Fetch-Site of that page (and no Authorization: a form cannot)."""
    with (
        live_server(Settings(data_dir=fresh_data_dir)) as base,
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        bearer = viewer_bearer(base)
        match = http.post(
            f"/api/graphs/{GRAPH}/matches", json={**STEP_RANK, **PAIR}, headers=bearer
        )
        assert match.status_code == 200, match.text
        form = {
            "Origin": "http://attacker.example",
            "Sec-Fetch-Site": "cross-site",
            "Sec-Fetch-Mode": "navigate",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        undo = f"/api/graphs/{GRAPH}/matches/undo"
        for headers in (
            form,
            {**form, **bearer},  # even with the token (a page cannot have it; be sure)
            {"Origin": "http://attacker.example", **bearer},  # an older browser: Origin only
            {"Origin": "null", **bearer},  # a sandboxed frame
            {"Sec-Fetch-Site": "same-site", **bearer},  # a sibling subdomain
        ):
            response = http.post(undo, params=STEP_RANK, content=b"", headers=headers)
            assert response.status_code == 403, (headers, response.text)
            assert response.json()["error"]["code"] == "cross_site"
        pairs = http.get(f"/api/graphs/{GRAPH}/matches", params=STEP_RANK).json()["pairs"]
        assert (PAIR["target"], PAIR["golden"]) in {(p["target"], p["golden"]) for p in pairs}
        # the viewer's own page: same origin, with its token
        own = {"Origin": base, "Sec-Fetch-Site": "same-origin", **bearer}
        assert http.post(undo, params=STEP_RANK, headers=own).status_code == 200
        # a cross-site GET (a link to the viewer from a chat) still opens
        link = http.get("/", headers={"Sec-Fetch-Site": "cross-site"})
        assert link.status_code == 200


def test_a_rebinding_request_is_refused(fresh_data_dir: Path) -> None:
    """attacker.example resolved to 127.0.0.1: the browser sends ``Host: attacker.example``."""
    with (
        live_server(Settings(data_dir=fresh_data_dir)) as base,
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        bearer = viewer_bearer(base)
        port = base.rsplit(":", 1)[1]
        for host in (
            f"attacker.example:{port}",
            "attacker.example",
            f"localhost.attacker.example:{port}",
        ):
            for method, path, kwargs in (
                ("GET", "/api/graphs", {}),
                ("GET", f"/api/graphs/{GRAPH}/table-export", {"params": STEP_RANK}),
                ("POST", f"/api/graphs/{GRAPH}/matches/undo", {"params": STEP_RANK}),
            ):
                response = http.request(method, path, headers={"Host": host, **bearer}, **kwargs)
                assert response.status_code == 403, (host, path, response.text)
                assert response.json()["error"]["code"] == "unknown_host"
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", f"10.1.2.3:{port}"):
            assert http.get("/api/graphs", headers={"Host": host}).status_code == 200, host


def test_host_names() -> None:
    assert host_name("LocalHost:8000") == "localhost"
    assert host_name("[::1]:8000") == "::1"
    assert host_name("example.com.") == "example.com"
    local = HostNames("127.0.0.1", [])
    assert local.allows("localhost:1") and local.allows("[::1]") and local.allows("192.168.0.4")
    assert not local.allows("attacker.example") and not local.allows("")
    named = HostNames("graphs.example.com", ["other.example"])
    assert named.allows("graphs.example.com:8000") and named.allows("OTHER.example")
    assert HostNames("0.0.0.0", ["*"]).allows("anything.example")


def test_the_check_can_be_turned_off_but_not_the_origin_checks(fresh_data_dir: Path) -> None:
    settings = Settings(data_dir=fresh_data_dir, protect_writes=False)
    with TestClient(create_app(settings)) as client:
        assert client.app.state.viewer_token is None  # type: ignore[attr-defined]
        for write in WRITES:
            assert _write(client, write).status_code == 200, write
        cross = _write(client, WRITES[3], Origin="http://attacker.example")
        assert cross.status_code == 403
        foreign = client.get("/api/graphs", headers={"Host": "attacker.example"})
        assert foreign.status_code == 403


def _serve_lines(data_dir: Path, *flags: str) -> tuple[subprocess.Popen[str], str, int]:
    """``graphboard serve`` as a user starts it, until it prints the URL to open."""
    port = free_port()
    graphboard = str(Path(sys.executable).with_name("graphboard"))
    process = subprocess.Popen(
        [graphboard, "serve", "--data-dir", str(data_dir), "--port", str(port), *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if line.startswith("graphboard: open "):
            return process, line.removeprefix("graphboard: open ").strip(), port
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError("graphboard serve printed no URL to open")


def test_serve_prints_the_viewer_url_with_its_token(fresh_data_dir: Path) -> None:
    process, url, port = _serve_lines(fresh_data_dir)
    try:
        found = re.fullmatch(rf"http://127\.0\.0\.1:{port}/\?token=(gbt_\w+_[\w-]+)", url)
        assert found, url
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            assert http.get(url).status_code == 200  # the page (it keeps the token)
            bearer = {"Authorization": f"Bearer {found.group(1)}"}
            match = http.post(
                f"/api/graphs/{GRAPH}/matches", json={**STEP_RANK, **PAIR}, headers=bearer
            )
            assert match.status_code == 200, match.text
            bare = http.post(f"/api/graphs/{GRAPH}/matches/undo", params=STEP_RANK)
            assert bare.status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
    # the next start gives the same token: a browser that kept it writes on without a click
    settings = Settings(data_dir=fresh_data_dir)
    catalog = Catalog(settings.catalog_url)
    try:
        assert viewer_token(catalog, settings) == found.group(1)
    finally:
        catalog.dispose()
    assert (fresh_data_dir / ".graphboard/viewer-token").stat().st_mode & 0o077 == 0
    # turned off: the URL has no token
    process, url, port = _serve_lines(fresh_data_dir, "--no-write-token")
    process.terminate()
    process.wait(timeout=30)
    assert url == f"http://127.0.0.1:{port}/"
