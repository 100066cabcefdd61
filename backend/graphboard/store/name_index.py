"""Case-insensitive name search over one graph, in memory, by substring or regex.

The lower-cased names are joined, in execution order, into one newline-separated string, so
a substring search is a single C-level scan: ``needle[^\\n]*`` matches once per name holding
the needle (it swallows the rest of the name), which counts names exactly and finds the next
page by resuming the scan at the cursor. Positions map back to names by binary search.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

_SEPARATOR = "\n"
MIN_LITERAL = 3  # shorter needles are not worth a pre-filter


class NameIndex:
    """Names of one graph in execution order; hits are execution positions (0-based)."""

    def __init__(self, names_in_exec_order: Sequence[str]) -> None:
        lowered = [name.lower() for name in names_in_exec_order]
        self.text = _SEPARATOR.join(lowered)
        lengths = np.fromiter((len(name) + 1 for name in lowered), np.int64, len(lowered))
        self.starts: npt.NDArray[np.int64] = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(
            np.int64
        )

    def __len__(self) -> int:
        return len(self.starts)

    def _position_of(self, offset: int) -> int:
        return int(np.searchsorted(self.starts, offset, side="right")) - 1

    def _offset_after(self, position: int | None) -> int:
        if position is None:
            return 0
        following = position + 1
        return len(self.text) + 1 if following >= len(self.starts) else int(self.starts[following])

    def substring(self, needle: str, after: int | None, limit: int) -> tuple[list[int], int]:
        """(up to ``limit`` + 1 positions after ``after``, how many names contain ``needle``)."""
        needle = needle.lower()
        if not needle or _SEPARATOR in needle or not len(self.starts):
            return [], 0
        pattern = re.compile(re.escape(needle) + "[^\\n]*")
        # subn counts in C without making a match object per hit.
        total = pattern.subn("", self.text)[1]
        hits: list[int] = []
        for match in pattern.finditer(self.text, self._offset_after(after)):
            hits.append(self._position_of(match.start()))
            if len(hits) > limit:
                break
        return hits, total

    def containing(self, needle: str) -> npt.NDArray[np.int64]:
        """Every position whose name contains ``needle`` (a regex search's candidates)."""
        needle = needle.lower()
        if not needle or _SEPARATOR in needle:
            return np.arange(len(self.starts), dtype=np.int64)
        pattern = re.compile(re.escape(needle) + "[^\\n]*")
        offsets = np.fromiter((match.start() for match in pattern.finditer(self.text)), np.int64)
        return np.searchsorted(self.starts, offsets, side="right").astype(np.int64) - 1


def regex_hits(
    pattern: re.Pattern[str],
    names: Sequence[str],
    exec_perm: npt.NDArray[Any],
    candidates: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Execution positions among ``candidates`` whose (original-case) name matches."""
    search = pattern.search
    return np.fromiter(
        (position for position in candidates if search(names[exec_perm[position]])), np.int64
    )


# --- regular expressions ----------------------------------------------------------------------------

_MAX_PATTERN = 256
# A quantified group that itself holds a quantifier, e.g. (a+)+ or (\w*)*: catastrophic
# backtracking. Python's re has no time-out, so such patterns are refused up front.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[*+}](?:[^()\\]|\\.)*\)\s*[*+{]")


def compile_search_regex(text: str) -> re.Pattern[str]:
    """A user's name regex, case-insensitive; ValueError says why it is refused."""
    if len(text) > _MAX_PATTERN:
        raise ValueError(f"the pattern is longer than {_MAX_PATTERN} characters")
    if _NESTED_QUANTIFIER.search(text):
        raise ValueError("nested quantifiers such as (a+)+ are not allowed (they can take forever)")
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error as error:
        raise ValueError(f"not a valid regular expression: {error}") from None


def required_literal(pattern: str) -> str | None:
    """The longest run of plain characters every match must contain (3+ characters), so a
    regex search only tests the names holding it. None when unsure (alternation, etc.)."""
    if "|" in pattern:
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
            elif char == "]":
                in_class = False
        elif char == "[":
            close()
            in_class = True
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
