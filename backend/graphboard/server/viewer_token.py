"""The viewer's token: the one a local user's browser writes with, printed in the URL that
``graphboard serve`` shows, as Jupyter does on localhost.

It is an ordinary catalog token (``graphboard token list`` shows it as "viewer", ``token
revoke`` ends it), so uploads, jobs and protected reads take it as any other. The server
keeps its text in the state folder, readable by its owner only, so a restart prints the same
URL and a browser that kept the token goes on writing without a click; a token revoked (or a
catalog reset) makes a new one at the next start.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from graphboard.server.catalog import Catalog, tokens
from graphboard.server.settings import Settings

TOKEN_NAME = "viewer"
TOKEN_FILE = "viewer-token"


def _saved(path: Path) -> str | None:
    try:
        return path.read_text("ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _save(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    # created 0600: the token writes to every graph the server serves
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(handle, "w", encoding="ascii") as out:
        out.write(token + "\n")
    os.replace(temporary, path)


def viewer_token(catalog: Catalog, settings: Settings) -> str:
    """The viewer's token: the saved one while the catalog accepts it, else a new one."""
    path = settings.state_root / TOKEN_FILE
    with catalog.session() as session:
        saved = _saved(path)
        if saved is not None and tokens.verify(session, saved) is not None:
            return saved
        created = tokens.create(session, TOKEN_NAME)
    _save(path, created.token)
    return created.token


def viewer_url(base: str, token: str | None) -> str:
    """The URL to open: with the token when writes need one (the page keeps it)."""
    return f"{base}/?token={token}" if token else f"{base}/"


def announce_when_started(server: Any, app: Any, base: str) -> None:
    """Print the viewer's URL (with its token) once ``server`` (a uvicorn.Server) listens,
    not before: a port already taken must not show a URL to someone else's server."""
    startup = server.startup

    async def started_then_announce(sockets: Any = None) -> None:
        await startup(sockets=sockets)
        if server.started:
            url = viewer_url(base, app.state.viewer_token)
            print(f"graphboard: open {url}", file=sys.stderr, flush=True)

    server.startup = started_then_announce
