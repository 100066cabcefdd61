"""Graph ids <-> files under the data dir, and nothing outside it.

A graph id is a file's path under the data dir, with ``/`` separators and without
``.vis.db``: ``runs/compare_20260101`` is ``<data_dir>/runs/compare_20260101.vis.db``.
Ids with ``..``, empty or hidden segments, backslashes or an absolute form are refused, and the
resolved file (symlinks followed) must still lie under the data dir.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

GRAPH_SUFFIX = ".vis.db"
MAX_ID_LENGTH = 1024
_DRIVE = re.compile(r"^[A-Za-z]:")


class InvalidGraphId(ValueError):
    """The id can never name a file under the data dir (``..``, absolute, hidden ...)."""


class UnknownGraph(LookupError):
    """No .vis.db file under the data dir has this id."""


def check_graph_id(graph_id: str) -> list[str]:
    """The id's path segments; InvalidGraphId says why an id is refused."""
    if not graph_id or len(graph_id) > MAX_ID_LENGTH:
        raise InvalidGraphId(f"a graph id has 1 to {MAX_ID_LENGTH} characters")
    if "\x00" in graph_id or "\\" in graph_id:
        raise InvalidGraphId("a graph id holds no NUL or backslash")
    if graph_id.startswith("/") or _DRIVE.match(graph_id):
        raise InvalidGraphId("a graph id is relative to the data dir, not an absolute path")
    segments = graph_id.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise InvalidGraphId("a graph id has no empty, '.' or '..' segments")
        if segment.startswith("."):
            raise InvalidGraphId("a graph id has no hidden (dot) segments")
    return segments


def resolve_graph(data_root: Path, graph_id: str) -> Path:
    """The .vis.db file of ``graph_id`` (``data_root`` already resolved)."""
    segments = check_graph_id(graph_id)
    candidate = data_root.joinpath(*segments[:-1], segments[-1] + GRAPH_SUFFIX)
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or a symlink loop
        raise UnknownGraph(graph_id) from None
    if not real.is_relative_to(data_root) or not real.is_file():
        raise UnknownGraph(graph_id)
    return real


@dataclass(frozen=True, slots=True)
class GraphFile:
    graph_id: str
    path: Path  # resolved
    size: int
    mtime_ns: int


def discover(data_root: Path) -> Iterator[GraphFile]:
    """Every .vis.db under the data dir, sorted by id. Hidden folders (our state) and
    symlinked folders are not entered; a symlinked file counts only if it resolves inside."""
    found: list[GraphFile] = []
    for folder, subfolders, files in os.walk(data_root, followlinks=False):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        base = Path(folder)
        for name in files:
            if not name.endswith(GRAPH_SUFFIX) or name.startswith("."):
                continue
            relative = (base / name).relative_to(data_root).as_posix()
            graph_id = relative[: -len(GRAPH_SUFFIX)]
            try:
                path = resolve_graph(data_root, graph_id)
                status = path.stat()
            except (InvalidGraphId, UnknownGraph, OSError):
                continue
            found.append(GraphFile(graph_id, path, status.st_size, status.st_mtime_ns))
    yield from sorted(found, key=lambda item: item.graph_id)
