"""Where a user views a .vis.db, said only when it is true.

A URL is printed as something to open only when a graphboard server is known to serve that
very file there (it answers for the file's graph id with the file's size and modification
time); otherwise the line says how to start one. Before ``serve`` and the demo print a URL,
the port is checked free, so a busy port is one line naming it instead of someone else's
server's URL followed by a bind traceback. Commands are named as the user can type them:
the bare name when the shell's PATH finds this install's script, else its full path.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path

from graphboard.errors import GraphboardError

# A local server answers /config from its file listing in milliseconds; a host that drops
# packets must not hold a command's exit for long.
PROBE_SECONDS = 1.0
# The config answer is one file's description; anything larger is not graphboard's.
PROBE_MAX_BYTES = 1 << 20


def script_dir() -> Path:
    """The folder of this install's console scripts (``.venv/bin``): the interpreter's own,
    not resolved through symlinks (a venv's python links to the system's)."""
    return Path(sys.executable).absolute().parent


def command(name: str) -> str:
    """``name`` as the user can run it: bare when PATH finds this install's script, else the
    script's absolute path (a fresh shell after ``scripts/demo`` has no venv on PATH)."""
    script = script_dir() / name
    if not script.exists():
        return name  # run from a source tree without console scripts: nothing better known
    found = shutil.which(name)
    if found is not None and os.path.samefile(found, script):
        return name
    return str(script)


def activate_hint() -> str | None:
    """How to put this install's commands on PATH, or None when they are on it already."""
    activate = script_dir() / "activate"
    if command("graphboard") == "graphboard" or not activate.exists():
        return None
    return f". {activate}"


def check_port_free(host: str, port: int) -> None:
    """A GraphboardError naming ``host:port`` when a server could not listen there (another
    process holds it, or the address is not this machine's). Bound with SO_REUSEADDR as
    uvicorn binds, so a port only in TIME_WAIT counts as free, as it is for uvicorn."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        raise GraphboardError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise GraphboardError(
                    f"{host}:{port} is already in use (another server?): "
                    "pick a free port with --port N"
                ) from None
            raise GraphboardError(
                f"cannot listen on {host}:{port}: {error.strerror or error}"
            ) from None


def serves_file(server: str, graph: str, path: Path) -> bool:
    """Whether the graphboard server at ``server`` serves ``path`` as ``graph``: its
    ``/api/graphs/{graph}/config`` answers with this file's size and modification time. Any
    failure (nothing listening, another program, a token asked for, a timeout) is False."""
    url = f"{server.rstrip('/')}/api/graphs/{urllib.parse.quote(graph)}/config"
    # straight to the server: an http_proxy in the environment must not answer for it
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        status = path.stat()
        with direct.open(url, timeout=PROBE_SECONDS) as response:
            listed = json.loads(response.read(PROBE_MAX_BYTES))
        modified = datetime.fromisoformat(str(listed["modified_at"])).timestamp()
        return bool(
            listed["size_bytes"] == status.st_size
            and abs(modified - status.st_mtime_ns / 1e9) < 1e-3
        )
    except (OSError, ValueError, KeyError, TypeError, urllib.error.URLError):
        return False


def view_line(server: str, graph: str, path: Path, url: str) -> str:
    """``open URL`` when the server there serves this file; else how to start one first (the
    folder absolute: scripts/demo runs from the checkout, not from the user's folder)."""
    address = f"{server.rstrip('/')}{url}"
    if serves_file(server, graph, path):
        return f"open      {address}"
    return (
        f"view      no server was found serving this file: start one with "
        f"`{command('graphboard')} serve --data-dir {path.parent.absolute()}`, then open {address}"
    )
