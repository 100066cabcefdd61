"""The catalog's engine and sessions, and its migrations run at start-up."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).with_name("migrations")


def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA busy_timeout = 10000")
    # Build processes commit job progress many times a second under load; NORMAL skips
    # the journal-header fsync of each commit (safe from corruption; after power loss the
    # last progress write may be lost, which a job's re-run repairs). WAL would be faster
    # still but leaves -wal/-shm files in the state folder while the server runs.
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


class Catalog:
    def __init__(self, url: str) -> None:
        self.url = url
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            self.engine: Engine = create_engine(url, connect_args={"check_same_thread": False})
            event.listen(self.engine, "connect", _sqlite_pragmas)
        else:
            self.engine = create_engine(url, pool_pre_ping=True)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._migrated = False
        self._lock = threading.Lock()

    def migrate(self) -> None:
        """Bring the schema to the newest migration (once per process)."""
        with self._lock:
            if self._migrated:
                return
            config = alembic_config(self.url)
            with self.engine.begin() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
            self._migrated = True

    @contextmanager
    def session(self) -> Iterator[Session]:
        self.migrate()
        with self.sessions() as session:
            yield session

    def dispose(self) -> None:
        self.engine.dispose()
