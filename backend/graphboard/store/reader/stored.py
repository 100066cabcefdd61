"""Decoding what a .vis.db stores as text or codes: JSON columns, level codes, links."""

from __future__ import annotations

from typing import Any

import orjson


def json_or(text: str | None, default: Any) -> Any:
    """A stored JSON column's value; ``default`` when it is empty or not JSON."""
    if not text:
        return default
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return default
