"""construct.json: the flat child -> parent map of the module hierarchy."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from graphboard.dump.jsonio import read_json_object
from graphboard.dump.repeats import repeated_keys
from graphboard.errors import DumpError

MEGATRON_KEY = "megatron_micro_step_number"


@dataclass(slots=True)
class Construct:
    parents: dict[str, str | None]  # file order is execution order
    micro_steps: dict[str, int] | None = None  # Megatron form only
    micro_step_count: int | None = None
    repeated: list[str] = field(default_factory=list)  # names given more than once, last kept


def read_construct(path: Path) -> Construct:
    raw, text = read_json_object(path, "construct.json (child name -> parent name)")
    repeated = repeated_keys(text, raw, None)
    megatron = MEGATRON_KEY in raw
    count = raw.pop(MEGATRON_KEY, None) if megatron else None
    if not raw:
        raise DumpError(
            path,
            "construct.json is empty: the dump has no module hierarchy",
            hint="dump at level L0 or mix; level L1 records APIs only",
        )
    parents: dict[str, str | None] = {}
    micro_steps: dict[str, int] | None = {} if megatron else None
    for child, value in raw.items():
        if megatron and isinstance(value, list):
            if len(value) != 2 or not isinstance(value[1], int):
                raise DumpError(
                    path,
                    f"value {value!r}",
                    record=child,
                    expected="[parent name or null, micro step]",
                )
            value, micro = value
            micro_steps[child] = micro  # type: ignore[index]
        if value is not None and not isinstance(value, str):
            raise DumpError(
                path,
                f"parent is a JSON {type(value).__name__}",
                record=child,
                expected="a node name or null",
            )
        # msprobe's own test dumps give "" as a top-level parent; msprobe reads it as none.
        parents[child] = value or None
    if megatron:
        if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
            raise DumpError(path, f"{MEGATRON_KEY} is {count!r}", expected="an integer")
        return Construct(parents, micro_steps, count, repeated)
    return Construct(parents, repeated=repeated)
