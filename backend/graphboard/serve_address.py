"""Where ``graphboard serve`` listens unless told otherwise: the defaults and environment
variables the server's settings read (``server.settings.Settings``), for the commands that
print a viewer URL without a server's settings at hand (``graphboard verdict``, graph_build's
summary)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol

from graphboard.errors import GraphboardError

ENV_PREFIX = "GRAPHBOARD_"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
HOST_ENV = f"{ENV_PREFIX}HOST"
PORT_ENV = f"{ENV_PREFIX}PORT"
LOWEST_PORT, HIGHEST_PORT = 1, 65535


class Listening(Protocol):
    """What a URL needs of a server's settings (``server.settings.Settings`` has both)."""

    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


def server_url(settings: Listening) -> str:
    """Where ``graphboard serve`` with these settings listens."""
    return f"http://{settings.host}:{settings.port}"


def _port(shown: str) -> int:
    port = int(shown) if shown.strip().isdecimal() else 0  # no sign, no "8_000"
    if not LOWEST_PORT <= port <= HIGHEST_PORT:
        raise GraphboardError(
            f"{PORT_ENV}={shown!r}: expected a port number, {LOWEST_PORT} to {HIGHEST_PORT}"
        )
    return port


def configured_url(environ: Mapping[str, str] | None = None) -> str:
    """Where ``graphboard serve`` listens with no --host or --port: the environment's
    ``GRAPHBOARD_HOST`` and ``GRAPHBOARD_PORT``, else the defaults. Names are matched in any
    case, as the server's settings match them."""
    given = os.environ if environ is None else environ
    named = {name.lower(): value for name, value in given.items()}
    host = named.get(HOST_ENV.lower(), DEFAULT_HOST)
    shown_port = named.get(PORT_ENV.lower())
    port = DEFAULT_PORT if shown_port is None else _port(shown_port)
    return f"http://{host}:{port}"
