"""Alembic environment: run by ``alembic upgrade head`` (alembic.ini at the repo root) and by
:meth:`graphboard.server.catalog.Catalog.migrate` at service start-up."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection, create_engine

from graphboard.server.catalog.models import Base

config = context.config
if config.config_file_name is not None and config.get_section("loggers") is not None:
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from graphboard.server.settings import Settings  # the CLI: same settings as the service

    settings = Settings()
    settings.state_root.mkdir(parents=True, exist_ok=True)
    return settings.catalog_url


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # ALTER on SQLite = copy table
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=Base.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(_url())
    with engine.begin() as owned:
        _run(owned)
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
