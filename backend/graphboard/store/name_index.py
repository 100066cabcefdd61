"""Case-insensitive name search over one graph, in memory.

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
