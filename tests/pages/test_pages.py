"""The viewer's page shell, its static files and plotly.js, as the server serves them."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from graphboard.server.app import create_app
from graphboard.server.routes.pages import REPO_FRONTEND
from graphboard.server.settings import Settings


def test_the_page_shell_loads_modules_only_from_self(client: TestClient) -> None:
    response = client.get("/?graph=x&node=%3Cscript%3E")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    html = response.text
    assert '<script type="module" src="/static/js/main.js"></script>' in html
    assert "<script>" not in html and "style=" not in html  # nothing inline for the CSP to refuse
    assert "<script>" not in html.split("</head>")[1]
    assert 'data-plotly-url="/vendor/plotly.min.js"' in html


def test_static_modules_are_served_as_javascript(client: TestClient) -> None:
    response = client.get("/static/js/tree/tree_model.js")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert response.headers["cache-control"] == "no-cache"
    assert client.get("/static/css/app.css").headers["content-type"].startswith("text/css")


@pytest.mark.parametrize(
    "path",
    [
        "/static/../templates/index.html",
        "/static/%2e%2e/templates/index.html",
        "/static/js/nope.js",
    ],
)
def test_nothing_outside_the_static_folder(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 404


def test_plotly_comes_from_the_python_package(client: TestClient) -> None:
    response = client.get("/vendor/plotly.min.js")
    assert response.status_code == 200
    assert "max-age" in response.headers["cache-control"]
    assert b"plotly.js" in response.content[:200]


def test_the_frontend_folder_is_found_from_the_package() -> None:
    assert (REPO_FRONTEND / "templates" / "index.html").is_file()
    assert (REPO_FRONTEND / "static" / "js" / "main.js").is_file()


def test_a_missing_frontend_says_where_to_point(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, templates_dir=tmp_path / "none")
    with TestClient(create_app(settings)) as other:
        response = other.get("/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "no_frontend"
