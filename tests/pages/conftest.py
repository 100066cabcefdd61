"""What the page tests share: a server over an empty data dir, serving the repository's
frontend/ (the pages need no graph to load)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from graphboard.server.app import create_app
from graphboard.server.settings import Settings


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    data = tmp_path_factory.mktemp("empty-data")
    with TestClient(create_app(Settings(data_dir=data))) as test_client:
        yield test_client
