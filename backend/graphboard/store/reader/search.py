"""Finding nodes: by name (substring or a guarded regex) and by verdict, in execution order.

Both page by an execution position and give the total; a regex is refused when it could run
away (:mod:`graphboard.store.name_regex`) and stopped past a deadline.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphboard.compare.result import Level
from graphboard.store import arrays
from graphboard.store.graph_views import GraphKey, GraphView
from graphboard.store.name_regex import compile_search_regex, required_literal
from graphboard.store.reader.opening import VisDb
from graphboard.store.reader.rules import ruled_view
from graphboard.store.reader.summaries import Page, summaries_by_order
from graphboard.store.rule_columns import MSPROBE


def find_names(
    db: VisDb,
    key: GraphKey,
    text: str,
    *,
    regex: bool = False,
    after: int | None = None,
    limit: int = 100,
    deadline: float | None = None,
    rules: str = MSPROBE,
) -> Page:
    """Nodes whose name contains ``text`` (any case), or matches the regex ``text``, in
    execution order, with the total. The cursor is an execution position. A regex is
    refused with RegexRefused (a ValueError), and stopped past ``deadline`` (a
    ``time.monotonic`` value) with SearchTooSlow."""
    view = ruled_view(db, key, rules)
    index = view.name_index
    if regex:
        pattern = compile_search_regex(text)
        literal = required_literal(text)
        needle = literal.lower() if literal is not None else None
        hits = index.matching(pattern, needle, deadline)
        total = len(hits)
        start = 0 if after is None else int(np.searchsorted(hits, after, side="right"))
        positions = [int(hit) for hit in hits[start : start + limit + 1]]
    else:
        positions, total = index.substring(text, after, limit)
    return _page_of_positions(db, key, view, positions, limit, total, rules)


def _page_of_positions(
    db: VisDb,
    key: GraphKey,
    view: GraphView,
    positions: Sequence[int],
    limit: int,
    total: int,
    rules: str,
) -> Page:
    shown = positions[:limit]
    orders = [int(view.exec_perm[position]) for position in shown]
    items = summaries_by_order(db, key, orders, rules)
    next_cursor = int(shown[-1]) if len(positions) > limit else None
    return Page(items, next_cursor, total)


def filter_by(
    db: VisDb,
    key: GraphKey,
    *,
    levels: Sequence[Level] = (),
    overflows: Sequence[str] = (),
    unmatched: bool = False,
    leaves_only: bool = False,
    after: int | None = None,
    limit: int = 100,
    rules: str = MSPROBE,
) -> Page:
    """Nodes at any of the given precision or overflow levels, or unmatched, in execution
    order, with the total and a count per criterion. The cursor is an execution position."""
    view = ruled_view(db, key, rules)
    columns = view.columns
    criteria = [(level.label, columns["level"] == int(level)) for level in levels]
    criteria += [(name, columns["overflow"] == arrays.OVERFLOW_CODES[name]) for name in overflows]
    if unmatched:
        criteria.append(("unmatched", columns["matched"] == 0))
    if leaves_only:
        leaf = columns["child_count"] == 0
        criteria = [(label, mask & leaf) for label, mask in criteria]
    counts = {label: int(mask.sum()) for label, mask in criteria}
    if not criteria:
        return Page([], None, 0, counts)
    combined = np.logical_or.reduce([mask for _label, mask in criteria])
    positions = np.flatnonzero(combined[view.exec_perm])
    start = 0 if after is None else int(np.searchsorted(positions, after, side="right"))
    window = [int(position) for position in positions[start : start + limit + 1]]
    page = _page_of_positions(db, key, view, window, limit, len(positions), rules)
    page.counts = counts
    return page
