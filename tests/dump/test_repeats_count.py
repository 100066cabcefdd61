"""repeats.py's cheap tests for repeated keys: the key count at a depth, in any layout, and
the count of line starts in a pretty-printed file, each checked against a count made another
way (a full parse that keeps every key, a split into lines) on every shared fixture's files
and at the edges."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fixture_cases import FIXTURES, fixture_path
from graphboard.dump.repeats import count_keys, count_line_starts, repeated_keys


def _keys_by_parsing(text: bytes, depth: int) -> int:
    """Keys at ``depth`` by the standard parser, repeats kept: an object is its list of pairs,
    and a list, like an object, is one level deeper (as count_keys counts brackets)."""
    document = json.loads(text, object_pairs_hook=lambda pairs: ("object", pairs))

    def walk(value: Any, level: int) -> int:
        if isinstance(value, tuple):
            here = len(value[1]) if level == depth else 0
            return here + sum(walk(item, level + 1) for _, item in value[1])
        if isinstance(value, list):
            return sum(walk(item, level + 1) for item in value)
        return 0

    return walk(document, 1)


def _line_starts_by_splitting(text: bytes, prefix: bytes) -> int:
    return sum(line.startswith(prefix) for line in text.split(b"\n")[1:])


def test_keys_and_line_starts_count_the_same_in_every_real_dump_file() -> None:
    fixture_path()  # skips without ../shared
    files = sorted(FIXTURES.rglob("*.json"))
    assert len(files) >= 24
    for path in files:
        text = path.read_bytes()
        for prefix in (b' "', b'  "', b"  }", b""):
            expected = _line_starts_by_splitting(text, prefix)
            assert count_line_starts(text, prefix) == expected, (path, prefix)
        compact = json.dumps(json.loads(text)).encode()
        for depth in (0, 1, 2, 3):
            expected = _keys_by_parsing(text, depth)
            assert count_keys(text, depth) == count_keys(compact, depth) == expected, path
        if path.name == "dump.json":  # every record name, in both layouts
            records = len(json.loads(text)["data"])
            assert count_keys(text, 2) == count_keys(compact, 2) == records, path


@pytest.mark.parametrize(
    ("text", "depth", "keys"),
    [
        (b"{}", 1, 0),
        (b'{"a": 1, "b" : {"c": [1, {"d": 2}]}}', 1, 2),
        (b'{"a": 1, "b" : {"c": [1, {"d": 2}]}}', 2, 1),
        (b'{"a": 1, "b" : {"c": [1, {"d": 2}]}}', 4, 1),  # inside a list, one level more
        (b'{"a\\"": ":", "b\\\\": "x\\\\", "c": "\\\\\\"}"}', 1, 3),  # escapes
        (b'{"x": ["a", "b:", {"k"\n\t\r :1}]}', 3, 1),  # values are not keys
        (b'{"[{": "}]", "a": {"b": 1, "b": 2}}', 2, 2),  # brackets in strings; a repeat counts
        (b'{"\\\\\\\\": {"\\u0022:": 1}}', 2, 1),  # runs of escaped backslashes, \u escapes
        ('{"é": {"名": 1}}'.encode(), 2, 1),
        (b'{"a": NaN, "b": -Infinity}', 1, 2),
        (b'{\n "data": {\n  "x": {},\n  "x": {}\n }\n}', 2, 2),
    ],
)
def test_keys_count_at_the_edges(text: bytes, depth: int, keys: int) -> None:
    assert count_keys(text, depth) == keys
    assert _keys_by_parsing(text, depth) == keys  # the oracle agrees


@pytest.mark.parametrize(
    ("text", "prefix"),
    [
        (b"", b'  "'),
        (b"\n", b""),
        (b'{\n  "a": 1,\n  "b": {\n   "c": 2}\n}', b'  "'),
        (b'\r\n  "a"\r\n  "b', b'  "'),  # CRLF: the prefix follows the newline
        (b'x\n  "', b'  "'),  # a prefix that ends the text
        (b"x\n  ", b'  "'),  # cut short
        (b"\n\n\n", b""),
        ("\n é\n é".encode(), " é".encode()),
    ],
)
def test_line_starts_count_at_the_edges(text: bytes, prefix: bytes) -> None:
    assert count_line_starts(text, prefix) == _line_starts_by_splitting(text, prefix)


def test_a_prefix_holding_a_newline_is_refused() -> None:
    with pytest.raises(ValueError, match="the prefix holds a newline"):
        count_line_starts(b"a\n\nb", b"\n")


_RECORDS = ['"a.0": {"output": [{"k": "}"}]}', '"b.0": {}', '"a.0": {}', '"c\\"": {}', '"b.0": {}']


@pytest.mark.parametrize(
    "raw",
    [
        ('{\n "task": "statistics",\n "data": {\n  ' + ",\n  ".join(_RECORDS) + "\n }\n}").encode(),
        ('{"task": "statistics", "data": {' + ", ".join(_RECORDS) + "}}").encode(),
    ],
    ids=["pretty", "compact"],
)
def test_repeated_record_names_are_found_in_either_layout(raw: bytes) -> None:
    parsed = json.loads(raw)["data"]
    assert len(parsed) == 3
    assert repeated_keys(raw, parsed, "data") == ["a.0", "b.0"]
    once = json.dumps({"data": parsed}, indent=1).encode()
    assert repeated_keys(once, parsed, "data") == []
