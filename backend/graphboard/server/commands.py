"""``graphboard token ...`` and ``graphboard worker``: the service's own command lines.

They find the catalog as the server does (``--data-dir``, ``GRAPHBOARD_DATABASE_URL``...),
and import the server only when run, so other commands start fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from graphboard.errors import GraphboardError


def _settings(args: argparse.Namespace) -> Any:
    from graphboard.server.settings import Settings

    given: dict[str, Any] = {}
    if getattr(args, "data_dir", None) is not None:
        given["data_dir"] = args.data_dir
    if getattr(args, "broker_url", None):
        given["broker_url"] = args.broker_url
    return Settings(**given)


@contextmanager
def _catalog_session(args: argparse.Namespace) -> Iterator[Any]:
    """A session of the catalog the server would use; its engine is closed afterwards."""
    from graphboard.server.catalog import Catalog

    settings = _settings(args)
    if not settings.data_root.is_dir():
        raise GraphboardError(f"{settings.data_dir}: the data dir does not exist")
    catalog = Catalog(settings.catalog_url)
    try:
        with catalog.session() as session:
            yield session
    finally:
        catalog.dispose()


def _token_create(args: argparse.Namespace) -> int:
    from graphboard.server.catalog import tokens

    with _catalog_session(args) as session:
        created = tokens.create(session, args.name)
    print(
        f"graphboard: token {created.prefix} ({created.name!r}) created; it is shown once, "
        "keep it secret",
        file=sys.stderr,
    )
    print(created.token)
    return 0


def _token_list(args: argparse.Namespace) -> int:
    from graphboard.server.catalog import tokens

    with _catalog_session(args) as session:
        for row in tokens.listed(session):
            state = "revoked" if row.revoked_at else "active"
            used = row.last_used_at.isoformat(timespec="seconds") if row.last_used_at else "-"
            print(f"{row.prefix}\t{state}\tlast used {used}\t{row.name}")
    return 0


def _token_revoke(args: argparse.Namespace) -> int:
    from graphboard.server.catalog import tokens

    with _catalog_session(args) as session:
        done = tokens.revoke(session, args.prefix)
    if not done:
        raise GraphboardError(f"no active token with prefix {args.prefix!r}")
    print(f"graphboard: token {args.prefix} revoked", file=sys.stderr)
    return 0


def _run_worker(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if not settings.broker_url:
        raise GraphboardError(
            "a worker needs a broker: set GRAPHBOARD_BROKER_URL (redis://host:6379/0) "
            "or pass --broker-url"
        )
    if not settings.data_root.is_dir():
        raise GraphboardError(f"{settings.data_dir}: the data dir does not exist")
    from graphboard.server.catalog import Catalog
    from graphboard.server.jobs.celery_app import run_worker

    Catalog(settings.catalog_url).migrate()  # a worker may start before the first server
    run_worker(settings, concurrency=args.concurrency, loglevel=args.loglevel)
    return 0


def _data_dir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="the server's data dir: its catalog (default: GRAPHBOARD_DATA_DIR or .)",
    )


def add_parsers(commands: Any) -> None:
    token = commands.add_parser("token", help="bearer tokens for uploads and jobs")
    actions = token.add_subparsers(dest="token_command", required=True)
    create = actions.add_parser("create", help="create a token and print it (once)")
    _data_dir_argument(create)
    create.add_argument("--name", help="what it is for (shown by `token list`)")
    create.set_defaults(run=_token_create)
    listing = actions.add_parser("list", help="tokens by prefix, never their secret")
    _data_dir_argument(listing)
    listing.set_defaults(run=_token_list)
    revoke = actions.add_parser("revoke", help="revoke a token by its prefix")
    _data_dir_argument(revoke)
    revoke.add_argument("prefix", help="the prefix `token list` shows (or the whole token)")
    revoke.set_defaults(run=_token_revoke)

    worker = commands.add_parser(
        "worker", help="run a Celery worker that builds uploaded dumps (needs a broker)"
    )
    _data_dir_argument(worker)
    worker.add_argument("--broker-url", help="default: GRAPHBOARD_BROKER_URL")
    worker.add_argument(
        "--concurrency",
        type=int,
        default=max(1, min(8, os.cpu_count() or 1)),
        help="builds at once (default: one per core, at most 8)",
    )
    worker.add_argument("--loglevel", default="INFO", help="Celery's log level (INFO)")
    worker.set_defaults(run=_run_worker)
