"""Regex search over node names, in time bounded by construction.

Python's ``re`` backtracks: ``(.|.)*!`` against a 60-character name takes longer than the age
of the universe, holding the GIL, so one request froze the server. Patterns are compiled by
RE2 (google-re2), whose matching is linear in the text and releases the GIL. Linear is not
yet bounded: when RE2's DFA runs out of memory (``(a|b)*a(a|b){20}c``) it falls back to an NFA
costing up to ~16 ns per byte per instruction, a minute for 10 MB. So work is metered too:
a call to RE2 reads at most ``WORK_PER_CALL / program size`` bytes (a name too long for that
is refused up front), and a search stops between calls once past its deadline.

All names, lower-cased, are one UTF-8 buffer with a newline after each. Most patterns are
found in it by one RE2 scan per chunk of names, in ``(?m)`` so that ``^``/``$`` hold at name
edges; a match that does not lie inside one name only marks that name for a check by itself.
Patterns turning ``m`` off, or quoting with ``\\Q``, are tried name by name.
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import re2

MAX_PATTERN = 256
MAX_PROGRAM = 10_000  # RE2 instructions: `.{1000}` is 8,004
WORK_PER_CALL = 1 << 28  # bytes x instructions one RE2 call may cost: ~4 s at NFA speed
MIN_LITERAL = 3  # shorter needles are not worth a pre-filter
_ESCAPE_ARGUMENTS = {"x": 2, "p": 1, "P": 1}  # \x41, \pL: the characters an escape takes
_UNANCHORED = re2._re2.RE2.Anchor.UNANCHORED
Hits = npt.NDArray[np.int64]


class RegexRefused(ValueError):
    """A pattern that cannot be searched (syntax, size or cost); the message says why."""


class SearchTooSlow(Exception):
    """A regex search stopped at its deadline."""


def _options() -> Any:
    options = re2.Options()
    options.case_sensitive = False  # names are lower-cased; so are the pattern's matches
    options.never_capture = True  # hits only: no group spans to compute
    options.log_errors = False  # refusals go back to the client, not to stderr
    return options


def _compiled(pattern: str) -> Any:
    compiled = re2._re2.RE2(pattern.encode("utf-8", "surrogatepass"), _options())
    if not compiled.ok():
        reason = compiled.error().decode("utf-8", "replace")
        raise RegexRefused(
            "not a regular expression RE2 accepts (no backreferences, lookaround, "
            f"possessive or atomic groups): {reason}"
        )
    return compiled


def _scan_pattern(pattern: str) -> str | None:
    """``pattern`` for the buffer of all names: multi-line, with the text's edges ``\\A`` and
    ``\\z`` as line edges, which are the names' edges there. None when the pattern turns
    multi-line off somewhere, or quotes (``\\Q...\\E``, where ``\\A`` is text): then names
    are tried one by one."""
    if "\\Q" in pattern:
        return None
    pieces: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            escape = pattern[index : index + 2]
            pieces.append({"\\A": "^", "\\z": "$"}.get(escape, escape))
            index += 2
            continue
        if pattern.startswith("(?", index):
            flags = pattern[index + 2 :].split(")", 1)[0].split(":", 1)[0]
            if "-" in flags and "m" in flags.split("-", 1)[1]:
                return None
        pieces.append(char)
        index += 1
    return "(?m)" + "".join(pieces)


@dataclass(frozen=True, slots=True)
class SearchRegex:
    """A user's name regex: RE2 for one name, and for the buffer of all names (None when
    only name by name is exact)."""

    per_name: Any
    scan: Any | None
    program_size: int  # the largest of the programs RE2 may run

    def chunk_bytes(self) -> int:
        return max(WORK_PER_CALL // self.program_size, 1)


def compile_search_regex(text: str) -> SearchRegex:
    """A user's name regex, case-insensitive; RegexRefused says why it is refused."""
    if len(text) > MAX_PATTERN:
        raise RegexRefused(f"the pattern is longer than {MAX_PATTERN} characters")
    per_name = _compiled(text)
    scan_text = _scan_pattern(text)
    scan = None if scan_text is None else _compiled(scan_text)
    programs = [per_name] + ([scan] if scan is not None else [])
    size = max(max(item.ProgramSize(), item.ReverseProgramSize()) for item in programs)
    if size > MAX_PROGRAM:
        raise RegexRefused(
            f"the pattern is too complex ({size} RE2 instructions, at most {MAX_PROGRAM})"
        )
    return SearchRegex(per_name, scan, max(size, 1))


class EncodedNames:
    """Lower-cased names as one UTF-8 buffer, each followed by a newline, with byte bounds."""

    def __init__(self, lowered: Sequence[str], text: str) -> None:
        self.buffer = text.encode("utf-8", "surrogatepass") + b"\n"
        if len(self.buffer) == len(text) + 1:  # ASCII: bytes are characters
            lengths = np.fromiter(map(len, lowered), np.int64, len(lowered))
        else:
            lengths = np.fromiter(
                (len(name.encode("utf-8", "surrogatepass")) for name in lowered),
                np.int64,
                len(lowered),
            )
        starts = np.zeros(len(lowered), np.int64)
        starts[1:] = np.cumsum(lengths + 1)[:-1]
        # array, not numpy: bisect reads it element by element at C speed
        self.starts = array("q", starts.tobytes())
        self.ends = array("q", (starts + lengths).tobytes())
        self.longest = int(lengths.max(initial=0))
        # a name holding a newline is always checked by itself: ^ and $ hold inside it
        self.multiline = (
            frozenset(i for i, name in enumerate(lowered) if "\n" in name)
            if text.count("\n") >= len(lowered)
            else frozenset()
        )
        self.view = memoryview(self.buffer)

    def __len__(self) -> int:
        return len(self.starts)


class _Meter:
    """RE2 calls against a deadline: each call is bounded, the clock is read before each."""

    def __init__(self, deadline: float | None, names: int) -> None:
        self.deadline = deadline
        self.names = names

    def check(self, tried: int) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise SearchTooSlow(
                f"the regex search stopped at its time limit ({tried} of {self.names} names "
                "tried): give it a literal part of 3+ characters, narrow it, or search by "
                "substring"
            )


def _name_matches(names: EncodedNames, regex: SearchRegex, position: int) -> bool:
    start, end = names.starts[position], names.ends[position]
    found = regex.per_name.Match(_UNANCHORED, names.view[start:end], 0, end - start)
    return bool(found[0][0] >= 0)


def _each_name(
    names: EncodedNames, regex: SearchRegex, positions: Sequence[int], meter: _Meter
) -> list[int]:
    hits = []
    for tried, position in enumerate(positions):
        meter.check(tried)
        if _name_matches(names, regex, position):
            hits.append(position)
    return hits


def _scan(names: EncodedNames, regex: SearchRegex, scan: Any, meter: _Meter) -> list[int]:
    """Positions of the names holding a match, by RE2 scans of the buffer, a chunk of names
    at a time. RE2 finds the leftmost match, so no name before its start holds one."""
    buffer, starts, ends = names.buffer, names.starts, names.ends
    multiline, chunk, count = names.multiline, regex.chunk_bytes(), len(names)
    check, match = meter.check, scan.Match
    hits: list[int] = []
    first = 0
    while first < count:
        # the names [first, last] within one chunk's bytes (at least one name)
        last = max(bisect_right(ends, starts[first] + chunk, first) - 1, first)
        limit = ends[last]
        position = first
        while position <= last:
            check(position)
            begin, end = match(_UNANCHORED, buffer, starts[position], limit)[0]
            if begin < 0:
                break
            # the name whose characters or closing newline hold the match's start
            owner = position if begin <= ends[position] else bisect_right(starts, begin) - 1
            # inside the owner's characters it is the owner's match; else only a candidate
            if (end <= ends[owner] and owner not in multiline) or _name_matches(
                names, regex, owner
            ):
                hits.append(owner)
            position = owner + 1
        first = last + 1
    return hits


def matching_names(
    names: EncodedNames,
    regex: SearchRegex,
    candidates: Hits | None,
    deadline: float | None,
) -> Hits:
    """Positions (ascending) whose name matches ``regex``; with ``candidates``, only those
    are tried. SearchTooSlow past ``deadline`` (a ``time.monotonic`` value)."""
    if names.longest * regex.program_size > WORK_PER_CALL:
        most = WORK_PER_CALL // max(names.longest, 1)
        raise RegexRefused(
            f"the pattern is too complex for this graph's longest name ({names.longest} bytes):"
            f" against it at most {most} RE2 instructions, the pattern has "
            f"{regex.program_size}; simplify it or search by substring"
        )
    # A scan costs an RE2 call per hit, a name-by-name check one per candidate: candidates
    # pay only when they are few.
    if candidates is not None and regex.scan is not None and len(candidates) > len(names) // 8:
        candidates = None
    meter = _Meter(deadline, len(names) if candidates is None else len(candidates))
    if candidates is not None:
        hits = _each_name(names, regex, candidates.tolist(), meter)
    elif regex.scan is None:
        hits = _each_name(names, regex, range(len(names)), meter)
    else:
        hits = _scan(names, regex, regex.scan, meter)
    return np.array(hits, np.int64)


def required_literal(pattern: str) -> str | None:
    """The longest run of plain characters every match must contain (3+ characters), so a
    regex search only tests the names holding it. None when unsure (alternation, etc.)."""
    if "|" in pattern or "\\Q" in pattern:  # alternation; RE2's \Q...\E quoting
        return None
    runs: list[str] = []
    current: list[str] = []
    depth = 0
    index = 0
    in_class = False

    def close() -> None:
        if current:
            runs.append("".join(current))
            current.clear()

    while index < len(pattern):
        char = pattern[index]
        following = pattern[index + 1] if index + 1 < len(pattern) else ""
        if in_class:
            if char == "\\":
                index += 1
            elif char == "[" and following == ":":  # RE2's [[:alpha:]]
                closing = pattern.find(":]", index + 2)
                index = len(pattern) if closing < 0 else closing + 1
            elif char == "]":
                in_class = False
        elif char == "[":
            close()
            in_class = True
            if following == "^":
                index += 1
            if pattern[index + 1 : index + 2] == "]":  # a leading ] is a member
                index += 1
        elif char == "(":
            close()
            depth += 1
        elif char == ")":
            close()
            depth -= 1
        elif char == "\\":
            index += 1
            if following and not following.isalnum() and depth == 0:
                if pattern[index + 1 : index + 2] in ("?", "*", "{"):
                    close()  # an optional character ends the run
                else:
                    current.append(following)
            else:  # \d, \w, \b ... are classes or anchors, not characters
                close()
                index = _skip_escape_argument(pattern, index)
        elif char in ".^$?*+":
            close()
        elif char == "{":  # a counted repeat: skip its bounds
            close()
            closing = pattern.find("}", index)
            index = len(pattern) if closing < 0 else closing
        elif depth == 0:
            if following in ("?", "*", "{"):
                close()  # an optional character ends the run
            else:
                current.append(char)
        index += 1
    close()
    best = max(runs, key=len, default="")
    return best if len(best) >= MIN_LITERAL else None


def _skip_escape_argument(pattern: str, index: int) -> int:
    """The index of the last character of the escape whose letter is at ``index``: ``\\x41``,
    ``\\x{263a}``, ``\\pL``, ``\\p{Greek}``, octal ``\\012`` take the characters after it,
    which are not literal text."""
    letter = pattern[index : index + 1]
    if letter in _ESCAPE_ARGUMENTS:
        if pattern[index + 1 : index + 2] == "{":
            closing = pattern.find("}", index)
            return len(pattern) if closing < 0 else closing
        return index + _ESCAPE_ARGUMENTS[letter]
    digits = 0
    while letter.isdigit() and digits < 2 and pattern[index + 1 : index + 2] in tuple("01234567"):
        index += 1
        digits += 1
    return index
