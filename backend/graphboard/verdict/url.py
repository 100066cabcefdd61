"""The viewer's address (relative to the server) of a file, or of a node in it: what a
verdict, a diagnosis and a finished job link to."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from graphboard.graph.model import TARGET_SIDE
from graphboard.graph.sides import spoken
from graphboard.store.reader import GraphKey


def viewer_url(graph: str, key: GraphKey | None = None, node: str | None = None) -> str:
    """The viewer's address (relative to the server) for a file, or a node in it."""
    query: dict[str, Any] = {"graph": graph}
    if key is not None and node is not None:
        query.update(step=key.step, rank=key.rank, node=node)
        if key.side != TARGET_SIDE:  # the viewer's own default
            query["side"] = spoken(key.side)
    return "/?" + urlencode(query)
