"""Regex search over node names: RE2's answers name by name, found by scans of all names at
once; refused or stopped, never running unbounded."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
import re2

from graphboard.store.name_index import NameIndex
from graphboard.store.name_regex import (
    WORK_PER_CALL,
    RegexRefused,
    SearchTooSlow,
    compile_search_regex,
    required_literal,
)

# Names with what trips a scan of the joined names up: edges, empty names, newlines inside a
# name, non-ASCII characters, words running into the next name.
NAMES = [
    "Module.layers.0.attention.Linear.forward.0",
    "Module.layers.10.mlp.Linear.backward.0",
    "Functional.linear.0.forward",
    "",
    "Tensor.__add__.3.forward",
    "line one\nline two",
    "模块.注意力.forward.0",
    "ab",
    "ba",
    "Torch.sum.0.forward",
    "x",
    "aaaa",
    "Distributed.all_reduce.2.forward",
    "KELVIN.ſtrange",
]
PATTERNS = [
    r"linear",
    r"^module\.",
    r"forward\.0$",
    r"\Amodule",
    r"0\z",
    r"\bforward\b",
    r"\Bar",
    r"a[^x]*b",
    r"b\sa",
    r"(?s)a.b",
    r"^$",
    r"x*",
    r"^line two$",
    r"one$",
    r"(?m)^line two",
    r"(?-m)^line",
    r"\Qtensor.__add\E",
    r"注意力",
    r"\d+\.forward",
    r"(a|b)+$",
    r"[[:alpha:]]{4}$",
    r"\pL+\.\pL+",
    r"forward.0\n",
    r"2\.forward\n?distributed",
    r"kelvin",
]


def _each_name(pattern: str, names: list[str]) -> list[int]:
    """The reference: RE2 (its own Python wrapper) on each lower-cased name by itself."""
    options = re2.Options()
    options.case_sensitive = False
    compiled = re2.compile(pattern, options)
    return [i for i, name in enumerate(names) if compiled.search(name.lower()) is not None]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_scan_of_all_names_finds_what_each_name_by_itself_holds(pattern: str) -> None:
    index = NameIndex(NAMES)
    regex = compile_search_regex(pattern)
    literal = required_literal(pattern)
    expected = _each_name(pattern, NAMES)
    assert index.matching(regex, None).tolist() == expected
    if literal is not None:
        assert index.matching(regex, literal.lower()).tolist() == expected
    # in a graph where the literal is rare, its candidates are tried name by name
    many = NAMES + [f"Module.filler.{i}.forward.0" for i in range(400)]
    assert index_hits(many, pattern) == _each_name(pattern, many)


def index_hits(names: list[str], pattern: str) -> list[int]:
    literal = required_literal(pattern)
    needle = literal.lower() if literal is not None else None
    return NameIndex(names).matching(compile_search_regex(pattern), needle).tolist()


@pytest.mark.parametrize(
    "pattern",
    [r"conv\d\.Conv2d", r"^Functional\.", r"forward\.0$", r"Tensor\.__(add|mul)__", r"relu.*back"],
)
def test_common_patterns_agree_with_python_re(pattern: str) -> None:
    names = [
        f"{kind}.{i}.{direction}.{i % 3}"
        for i in range(2000)
        for kind, direction in (
            ("Module.blocks.conv1.Conv2d", "forward"),
            ("Functional.relu", "backward"),
            ("Tensor.__add__", "forward"),
            ("Tensor.__mul__", "backward"),
        )
    ]
    python = re.compile(pattern, re.IGNORECASE)
    assert index_hits(names, pattern) == [i for i, name in enumerate(names) if python.search(name)]


@pytest.mark.parametrize(
    ("pattern", "holds"),
    [
        ("(.|.)*!", lambda name: "!" in name),
        (".*.*.*!", lambda name: "!" in name),
        (r"(?:(\w|\.)*)*!", lambda name: "!" in name),
        ("(a+)+$", lambda name: name.endswith("a")),
        (r"(\w*)*x", lambda name: "x" in name),
        ("x+z", lambda name: "xz" in name),
    ],
)
def test_catastrophic_patterns_are_answered(pattern: str, holds: object) -> None:
    """Patterns that backtrack for ever in Python's re on names like these."""
    names = ["a" * 60, "x" * 5000 + "!", "Module." + "a." * 40 + "forward", "xxxz"]
    assert callable(holds)
    assert index_hits(names, pattern) == [i for i, name in enumerate(names) if holds(name)]


def test_a_ten_megabyte_name() -> None:
    huge = "Functional." + "x" * 10_000_000 + ".0.forward"
    names = ["Module.a.forward.0", huge, "Module.xz.forward.0"]
    assert index_hits(names, "x+z") == [2]
    assert index_hits(names, r"\.0\.forward$") == [1]
    with pytest.raises(RegexRefused, match=r"too complex for this graph's longest name \(10000021"):
        index_hits(names, "(a|b)*a(a|b){20}c")


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        (r"(a)\1", r"no backreferences.*: invalid escape sequence: \\1"),
        ("(?=x)a", r"invalid perl operator: \(\?="),
        ("(?<!x)a", r"invalid perl operator: \(\?<!"),
        ("(?>a)", r"invalid perl operator: \(\?>"),
        ("a++", "bad repetition operator"),
        ("(", "missing \\)"),
        ("[a-", "missing \\]"),
        ("x" * 300, "longer than 256"),
        ("[^.]{1000}" * 3, r"too complex \(24004 RE2 instructions, at most 10000\)"),
    ],
)
def test_refused_patterns_say_why(pattern: str, says: str) -> None:
    with pytest.raises(RegexRefused, match=says) as refused:
        compile_search_regex(pattern)
    assert "\n" not in str(refused.value)


def test_a_search_stops_at_its_deadline() -> None:
    """The DFA of (a|b)*a(a|b){20}c does not fit in RE2's memory: it falls back to its NFA,
    ~16 ns per byte and instruction, about 7 s for these 16 MB here. Stopped after 0.5 s.
    (?-m) has the names tried one by one, 64 KB a call; a scan stops between chunks alike."""
    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"ab", np.uint8)[rng.integers(0, 2, 1 << 24)].tobytes().decode()
    names = [letters[i : i + (1 << 16)] for i in range(0, len(letters), 1 << 16)]
    regex = compile_search_regex("(?-m)(a|b)*a(a|b){20}c")
    assert regex.scan is None
    index = NameIndex(names)
    with pytest.raises(SearchTooSlow, match=r"time limit \(\d+ of 256 names tried\)"):
        index.matching(regex, None, deadline=time.monotonic() + 0.5)
    scanned = compile_search_regex("(a|b)*a(a|b){20}c")
    assert scanned.chunk_bytes() * scanned.program_size <= WORK_PER_CALL
    with pytest.raises(SearchTooSlow):
        index.matching(scanned, None, deadline=time.monotonic())


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (r"\x41bcdef", "bcdef"),  # not "41bcdef"
        (r"\pLabcd", "abcd"),
        (r"\p{Greek}abcd", "abcd"),
        (r"[]abc]defg", "defg"),  # a leading ] is in the class
        (r"[[:alpha:]]wxyz", "wxyz"),
        (r"\Qabc\E?", None),
        (r"\0123abcd", "3abcd"),  # octal: 3 digits at most
        (r"\012abcd", "abcd"),
    ],
)
def test_required_literal_of_re2_syntax(pattern: str, literal: str | None) -> None:
    assert required_literal(pattern) == literal
    names = ["Abcdef", "ßabcd", "αabcd", "]defg", "xwxyz", "ab", "\n3abcd", "Sabcd"]
    options = re2.Options()
    options.case_sensitive = False
    for name in names:
        if literal is not None and re2.compile(pattern, options).search(name.lower()):
            assert literal.lower() in name.lower(), (pattern, name)
