"""Clients of an app serving a data dir of real .vis.db files (see served_files.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from served_files import BuildFn, fixture_path, populate

from ci_support import with_viewer_token
from graphboard.server.app import create_app
from graphboard.server.settings import Settings


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory, built: BuildFn) -> Path:
    """Read-only use only: tests that match get their own copy (``fresh_data_dir``)."""
    fixture_path("convnet-stats")
    return populate(tmp_path_factory.mktemp("data"), built)


@pytest.fixture(scope="session")
def client(data_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(data_dir=data_dir))) as test_client:
        with_viewer_token(test_client)
        yield test_client


@pytest.fixture
def fresh_data_dir(tmp_path: Path, built: BuildFn) -> Path:
    ids = [
        "ours/layer-mapping",
        "msprobe/layer-mapping",
        "ours/convnet-stats",
        "ours/convnet-tensor",
    ]
    fixture_path("layer-mapping")
    return populate(tmp_path / "data", built, ids)


@pytest.fixture
def fresh_client(fresh_data_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(data_dir=fresh_data_dir))) as test_client:
        with_viewer_token(test_client)
        yield test_client
