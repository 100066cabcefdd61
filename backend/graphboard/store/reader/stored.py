"""Decoding what a .vis.db stores as text or codes: JSON columns, level codes, links."""

from __future__ import annotations

from typing import Any

import orjson

from graphboard.compare.result import Level

_LEVEL_NAMES = {int(level): level.label for level in Level}


def json_or(text: str | None, default: Any) -> Any:
    """A stored JSON column's value; ``default`` when it is empty or not JSON."""
    if not text:
        return default
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return default


def level_name(code: int | None) -> str | None:
    """pass | warning | error for a stored level code; None for none (negative)."""
    return None if code is None or code < 0 else _LEVEL_NAMES.get(int(code))
