"""The catalog: migrations at start-up and from the repo's alembic.ini, models matching them,
SQLite by default and PostgreSQL when GRAPHBOARD_DATABASE_URL says so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import main as alembic_main
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, inspect, select, text

from graphboard.server.app import create_app
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.models import Base, KnownGraph
from graphboard.server.catalog.session import alembic_config
from graphboard.server.settings import Settings
from services import postgres_server

REPO = Path(__file__).resolve().parents[2]


def _head() -> str:
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None
    return head


def test_migrations_run_at_start_up(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    with TestClient(create_app(settings)):
        pass
    engine = create_engine(settings.catalog_url)
    with engine.connect() as conn:
        assert "known_graphs" in inspect(conn).get_table_names()
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == _head()
    engine.dispose()


def test_alembic_upgrade_head_from_the_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("GRAPHBOARD_DATABASE_URL", url)
    monkeypatch.chdir(REPO)
    alembic_main(["-c", str(REPO / "alembic.ini"), "-x", "unused=1", "upgrade", "head"])
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == _head()
    engine.dispose()


def test_models_match_the_migrations(tmp_path: Path) -> None:
    catalog = Catalog(f"sqlite:///{tmp_path / 'c.db'}")
    catalog.migrate()
    with catalog.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    catalog.dispose()


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A throw-away PostgreSQL cluster on a unix socket (see tests/services.py)."""
    with postgres_server() as url:
        yield url


@pytest.mark.services
def test_postgresql_catalog(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty.vis.db").write_bytes(b"")
    monkeypatch.setenv("GRAPHBOARD_DATABASE_URL", postgres_url)
    settings = Settings(data_dir=tmp_path)
    assert settings.catalog_url == postgres_url
    app = create_app(settings)
    with TestClient(app) as client:
        assert client.get("/api/graphs").status_code == 200
        with app.state.catalog.session() as session:
            rows = list(session.scalars(select(KnownGraph)))
        assert [row.graph_id for row in rows] == ["empty"] and rows[0].error
        with app.state.catalog.engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
