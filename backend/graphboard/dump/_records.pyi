# The hot path of dump.json record parsing (_records.c); see records.parse_record.
from collections.abc import Callable
from pathlib import Path
from typing import Any

def configure(
    param_type: type,
    leaf_fields: frozenset[str],
    flatten: Callable[..., None],
    shapes: dict[tuple[Any, ...], tuple[Any, ...]],
    sections: tuple[tuple[str, Any, str], ...],
    roles: tuple[Any, ...],
) -> None: ...
def parse_sections(record: dict[str, Any], path: Path, name: str) -> list[Any] | None: ...
def pack_params(records: dict[str, list[Any]]) -> bytes: ...
def unpack_params(packed: bytes) -> dict[str, list[Any]]: ...
