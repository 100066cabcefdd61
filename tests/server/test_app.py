"""create_app's extension points and the ``graphboard serve`` command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import APIRouter
from fastapi.testclient import TestClient

from graphboard.cli import graphboard_main
from graphboard.errors import GraphboardError
from graphboard.server.app import create_app, mount_static
from graphboard.server.settings import Settings


def test_extra_routers_and_static_files(tmp_path: Path) -> None:
    extra = APIRouter()

    @extra.get("/api/hello")
    def hello() -> dict[str, str]:
        return {"hello": "world"}

    static = tmp_path / "static"
    static.mkdir()
    (static / "app.js").write_text("export const x = 1;\n")
    app = create_app(Settings(data_dir=tmp_path, static_dir=static), routers=[extra])
    mount_static(app, "/more", static, name="more")
    with TestClient(app) as client:
        assert client.get("/api/hello").json() == {"hello": "world"}
        for url in ("/static/app.js", "/more/app.js"):
            response = client.get(url)
            assert response.status_code == 200 and "export const" in response.text
            assert response.headers["x-content-type-options"] == "nosniff"
        assert client.get("/static/../settings.py").status_code == 404


def test_a_missing_data_dir_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GraphboardError, match="does not exist"):
        create_app(Settings(data_dir=tmp_path / "nope"))


def test_settings_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHBOARD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("GRAPHBOARD_PAGE_SIZE", "17")
    monkeypatch.setenv("GRAPHBOARD_DATABASE_URL", "sqlite:///" + str(tmp_path / "x.db"))
    settings = Settings()
    assert settings.data_root == tmp_path.resolve()
    assert settings.page_size == 17
    assert settings.catalog_url.endswith("x.db")
    assert settings.state_root == tmp_path.resolve() / ".graphboard"


def test_graphboard_serve_runs_uvicorn_on_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []

    def fake_run(server: uvicorn.Server) -> None:
        config = server.config
        calls.append({"app": config.app, "host": config.host, "port": config.port})
        server.started = True

    monkeypatch.setattr(uvicorn.Server, "run", fake_run)
    assert graphboard_main(["serve", "--data-dir", str(tmp_path), "--port", "8123"]) == 0
    assert calls[0]["host"] == "127.0.0.1" and calls[0]["port"] == 8123
    assert calls[0]["app"].state.settings.data_root == tmp_path.resolve()
    assert graphboard_main(["serve", "--data-dir", str(tmp_path / "missing")]) == 1
