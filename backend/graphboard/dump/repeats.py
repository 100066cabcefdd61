"""Keys repeated in one JSON object, which every JSON parser resolves silently, the last wins.

msprobe writes one key per record, so a repeated record name in dump.json, or node name in
construct.json, means a corrupted or concatenated dump. orjson does not say when it drops
one. The check costs next to nothing: in a pretty-printed file (msprobe writes ``indent=1``)
every key of an object at depth d starts a line indented d units, so counting those lines
(one ``bytes.count``) gives how many keys the text holds; in any other layout a scan of
strings and brackets counts them. Only when the count differs from the parsed object's size
(a repeat, or other objects' keys at that depth) is the text parsed again, with the standard
parser, to name the repeated keys.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

# A pretty-printed object's first key, indented by the file's unit (msprobe's: one space).
INDENT = re.compile(rb"\A\s*\{\r?\n( +)\"")


def count_line_starts(text: bytes, prefix: bytes) -> int:
    """How many lines after the first start with ``prefix`` (which holds no newline)."""
    if b"\n" in prefix:  # lines that start with a newline would overlap
        raise ValueError("the prefix holds a newline")
    return text.count(b"\n" + prefix)


# A JSON string (the unrolled form: a run of plain characters between escapes, so the regex
# engine does not try an alternative at every character).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# Every byte but the brackets and the colon.
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b"{}[]:")))
_COLON, _OPENING = ord(":"), b"{["


def count_keys(text: bytes, depth: int) -> int:
    """How many object keys the JSON ``text`` (valid, already parsed) holds at nesting depth
    ``depth`` (1: the top-level object's), in any layout. Outside strings a colon follows a
    key and nothing else, so with the strings taken out (by the regex engine) and all but
    brackets and colons deleted (by ``bytes.translate``), what is left to walk in Python is a
    colon per key and the brackets."""
    structure = _STRING.sub(b"", text).translate(None, _NOT_STRUCTURE)
    level = count = 0
    for byte in structure:
        if byte == _COLON:
            count += level == depth
        elif byte in _OPENING:
            level += 1
        else:
            level -= 1
    return count


def repeated_keys(raw: bytes, parsed: dict[str, Any], member: str | None) -> list[str]:
    """The keys that appear more than once, in order, in ``raw``'s top-level object (``member``
    None) or in the object its top-level key ``member`` holds; ``parsed`` is that object as
    a parser read it."""
    depth = 1 if member is None else 2
    indent = INDENT.match(raw)
    if indent is not None:  # pretty-printed: each key starts a line
        keys = count_line_starts(raw, indent.group(1) * depth + b'"')
    else:
        keys = count_keys(raw, depth)
    return [] if keys == len(parsed) else _exact_repeats(raw, member)


def _exact_repeats(raw: bytes, member: str | None) -> list[str]:
    """Parse ``raw`` again, keeping each object's repeated keys by the id of the dict it
    becomes (the parser builds objects inside out). The dict is kept too: a value dropped
    for a repeated key is freed, and a later dict could take its id."""
    repeats: dict[int, tuple[dict[str, Any], list[str]]] = {}

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            seen: set[str] = set()
            repeated: list[str] = []
            for key, _ in pairs:
                if key in seen and key not in repeated:
                    repeated.append(key)
                seen.add(key)
            repeats[id(result)] = (result, repeated)
        return result

    # The first parse accepted the text, and the standard parser accepts what orjson does.
    document = json.loads(raw, object_pairs_hook=pairs_hook)
    target = document if member is None else document.get(member)
    found = repeats.get(id(target)) if isinstance(target, dict) else None
    return found[1] if found is not None else []


def repeats_warning(path: Path, repeated: list[str], what: str) -> str:
    """One line naming the repeated ``what`` names (record / node) of ``path``."""
    count = len(repeated)
    names = ", ".join(repeated[:5]) + (" ..." if count > 5 else "")
    verb = "s appear" if count > 1 else " appears"
    return (
        f"{path}: {count} {what} name{verb} more than once, the last one kept (msprobe writes"
        f" one key per record: a corrupted or concatenated dump?): {names}"
    )
