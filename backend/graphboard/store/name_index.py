"""Case-insensitive name search over one graph, in memory, by substring or regex.

The lower-cased names are kept as a list, in execution order, and joined into one
newline-separated string. ``str.count`` on the string (C's fast search, ~20 ms for a million
names) says how often the needle occurs. When that is rarely, as for most queries a user
types, a ``str.find`` walk collects the hits and a binary search maps them to names. When it
is often, the total is ``sum(map(operator.contains, ...))`` (one C-level pass over the list,
whatever the hits) and a page is found by the same ``find`` walk from the cursor. Recent
queries are remembered, so paging through one is cheap. Regexes are matched by
:mod:`graphboard.store.name_regex` against a UTF-8 copy of the names, made on first use.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Sequence
from itertools import compress, count, repeat

import numpy as np
import numpy.typing as npt

from graphboard.store.name_regex import EncodedNames, SearchRegex, matching_names

_SEPARATOR = "\n"
FEW_OCCURRENCES = 100_000  # up to this, collect hits with a find walk
_REMEMBERED = 32
Hits = npt.NDArray[np.int64]


class NameIndex:
    """Names of one graph in execution order; hits are execution positions (0-based)."""

    def __init__(self, names_in_exec_order: Sequence[str]) -> None:
        self.lowered = [name.lower() for name in names_in_exec_order]
        self.text = _SEPARATOR.join(self.lowered)
        lengths = np.fromiter((len(name) + 1 for name in self.lowered), np.int64, len(self.lowered))
        self.starts: Hits = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        # needle -> (every hit, when few; the total)
        self._remembered: OrderedDict[str, tuple[Hits | None, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._encoded: EncodedNames | None = None

    def __len__(self) -> int:
        return len(self.lowered)

    def _lookup(self, needle: str) -> tuple[Hits | None, int]:
        """(positions of the names holding ``needle`` when it occurs rarely, else None; their
        number). ``needle`` is lower-cased and holds no newline."""
        with self._lock:
            known = self._remembered.get(needle)
            if known is not None:
                self._remembered.move_to_end(needle)
                return known
        occurrences = self.text.count(needle)
        found: tuple[Hits | None, int]
        if occurrences <= FEW_OCCURRENCES:
            offsets = np.empty(occurrences, np.int64)
            find, offset, step = self.text.find, 0, max(len(needle), 1)
            for index in range(occurrences):
                offsets[index] = offset = find(needle, offset)
                offset += step
            hits = np.unique(np.searchsorted(self.starts, offsets, side="right") - 1)
            found = (hits, len(hits))
        else:
            found = (None, sum(map(operator.contains, self.lowered, repeat(needle))))
        with self._lock:
            self._remembered[needle] = found
            while len(self._remembered) > _REMEMBERED:
                self._remembered.popitem(last=False)
        return found

    def substring(self, needle: str, after: int | None, limit: int) -> tuple[list[int], int]:
        """(up to ``limit`` + 1 positions after ``after``, how many names contain ``needle``)."""
        needle = needle.lower()
        if not needle or _SEPARATOR in needle or not self.lowered:
            return [], 0
        hits, total = self._lookup(needle)
        if hits is not None:
            start = 0 if after is None else int(np.searchsorted(hits, after, side="right"))
            return [int(hit) for hit in hits[start : start + limit + 1]], total
        page: list[int] = []
        position = -1 if after is None else after
        text, starts, size = self.text, self.starts, len(self.lowered)
        while len(page) <= limit and position + 1 < size:
            offset = text.find(needle, int(starts[position + 1]))
            if offset < 0:
                break
            position = int(np.searchsorted(starts, offset, side="right")) - 1
            page.append(position)  # the next search starts at the following name
        return page, total

    def containing(self, needle: str) -> Hits:
        """Every position whose name contains ``needle`` (a regex search's candidates)."""
        needle = needle.lower()
        if not needle or _SEPARATOR in needle:
            return np.arange(len(self.lowered), dtype=np.int64)
        hits, _total = self._lookup(needle)
        if hits is not None:
            return hits
        return np.fromiter(
            compress(count(), map(operator.contains, self.lowered, repeat(needle))), np.int64
        )

    def matching(
        self, regex: SearchRegex, needle: str | None, deadline: float | None = None
    ) -> Hits:
        """Positions whose name matches ``regex`` (compiled case-insensitive, so it matches
        the lower-cased name alike); with ``needle``, only names containing it are tried.
        Past ``deadline`` (``time.monotonic``), SearchTooSlow."""
        candidates = None if needle is None else self.containing(needle)
        return matching_names(self.encoded(), regex, candidates, deadline)

    def encoded(self) -> EncodedNames:
        with self._lock:  # built once: the copy is as large as the names
            if self._encoded is None:
                self._encoded = EncodedNames(self.lowered, self.text)
            return self._encoded
