"""The Table page's shell as the server serves it: its own module and CSS, nothing inline."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from graphboard.server.app import create_app
from graphboard.server.settings import Settings


def test_the_table_page_loads_its_module_only_from_self(client: TestClient) -> None:
    response = client.get("/table?graph=x&name=%3Cscript%3E")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"
    assert "script-src 'self'" in response.headers["content-security-policy"]
    html = response.text
    assert '<script type="module" src="/static/js/table/main.js"></script>' in html
    assert '<link rel="stylesheet" href="/static/css/table.css">' in html
    assert "<script>" not in html and "style=" not in html
    assert client.get("/static/js/table/table_page.js").status_code == 200


def test_without_its_template_the_page_says_where_it_looked(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    empty = tmp_path_factory.mktemp("no-templates")
    settings = Settings(data_dir=empty, templates_dir=empty)
    with TestClient(create_app(settings)) as test_client:
        response = test_client.get("/table")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "no_frontend"
    assert str(empty) in response.json()["error"]["message"]
