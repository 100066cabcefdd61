"""Bearer tokens: created by the CLI, stored hashed, checked on the upload and job routes
(and on reads when protect_reads is set), revoked."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from ci_support import auth
from graphboard.cli import graphboard_main
from graphboard.server.app import create_app
from graphboard.server.catalog import Catalog, tokens
from graphboard.server.catalog.models import ApiToken
from graphboard.server.settings import Settings


def _cli_token(data: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert graphboard_main(["token", "create", "--data-dir", str(data), *extra]) == 0
    out = capsys.readouterr()
    assert "shown once" in out.err
    return out.out.strip()


def test_token_create_prints_a_token_that_is_stored_only_as_a_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = _cli_token(tmp_path, capsys, "--name", "nightly CI")
    assert token.startswith("gbt_") and len(token) > 50
    catalog = Catalog(Settings(data_dir=tmp_path).catalog_url)
    with catalog.session() as session:
        (row,) = session.scalars(select(ApiToken))
        assert row.name == "nightly CI"
        assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
        assert token not in (row.token_hash, row.prefix) and row.prefix in token
        assert tokens.verify(session, token) is not None
        assert tokens.verify(session, token[:-1] + ("A" if token[-1] != "A" else "B")) is None
        assert tokens.verify(session, "gbt_nothex_" + "x" * 43) is None
    catalog.dispose()
    catalog_file = tmp_path / ".graphboard" / "catalog.db"
    assert token.encode() not in catalog_file.read_bytes()


def test_routes_need_a_valid_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    token = _cli_token(tmp_path, capsys)
    with TestClient(create_app(Settings(data_dir=tmp_path))) as client:
        for method, url in (
            ("POST", "/api/uploads"),
            ("GET", "/api/jobs"),
            ("POST", "/api/jobs"),
            ("GET", "/api/jobs/" + "0" * 32),
            ("GET", "/api/jobs/" + "0" * 32 + "/verdict"),
            ("GET", "/api/dumps"),
        ):
            missing = client.request(method, url)
            assert missing.status_code == 401, url
            assert missing.headers["www-authenticate"] == "Bearer"
            assert missing.json()["error"]["code"] == "missing_token"
            bad = client.request(method, url, headers=auth("gbt_000000000000_" + "x" * 43))
            assert bad.status_code == 401 and bad.json()["error"]["code"] == "invalid_token"
            basic = client.request(method, url, headers={"Authorization": "Basic dXNlcjpwdw=="})
            assert basic.status_code == 401
        assert client.get("/api/jobs", headers=auth(token)).json() == {"jobs": []}
        unknown = client.get("/api/jobs/" + "0" * 32, headers=auth(token))
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_job"
        assert client.get("/api/graphs").status_code == 200  # reads are open by default


def test_a_revoked_token_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    token = _cli_token(tmp_path, capsys)
    with TestClient(create_app(Settings(data_dir=tmp_path))) as client:
        assert client.get("/api/jobs", headers=auth(token)).status_code == 200
        prefix = token.split("_")[1]
        assert graphboard_main(["token", "list", "--data-dir", str(tmp_path)]) == 0
        assert f"{prefix}\tactive" in capsys.readouterr().out
        assert graphboard_main(["token", "revoke", "--data-dir", str(tmp_path), prefix]) == 0
        refused = client.get("/api/jobs", headers=auth(token))
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_token"
    assert graphboard_main(["token", "revoke", "--data-dir", str(tmp_path), prefix]) == 1
    assert "no active token" in capsys.readouterr().err


def test_protect_reads_puts_the_read_api_behind_a_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = _cli_token(tmp_path, capsys)
    monkeypatch.setenv("GRAPHBOARD_PROTECT_READS", "1")
    settings = Settings(data_dir=tmp_path)
    assert settings.protect_reads
    with TestClient(create_app(settings)) as client:
        refused = client.get("/api/graphs")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "missing_token"
        assert client.get("/api/graphs/x/children?side=NPU&step=0&rank=0").status_code == 401
        assert client.get("/api/graphs", headers=auth(token)).status_code == 200
        # The page shells and static modules stay open: a browser cannot send a bearer
        # token when it navigates; the data behind them is what is protected.
        assert client.get("/static/js/api.js").status_code == 200
