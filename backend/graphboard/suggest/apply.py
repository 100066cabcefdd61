"""Proposals for a whole file, and accepting them as manual matches through the matching
machinery (one import action per step and rank: history, undo, rescoring and roll-ups as a
user's .vis.config import gets them)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from graphboard import matching
from graphboard.errors import GraphboardError
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE
from graphboard.matching.access import FileSettings, MatchingSettings
from graphboard.refusals import Refusal
from graphboard.store.reader import GraphKey, VisDb, open_vis_db, overlay
from graphboard.store.reader import graphs as reader_graphs
from graphboard.suggest.proposals import propose
from graphboard.suggest.rejections import rejected
from graphboard.suggest.results import Fused, Proposals, Suggestion


def graph_parts(db: VisDb) -> list[tuple[int, int]]:
    """(step, rank) of every graph with both sides, in order."""
    sides: dict[tuple[int, int], set[str]] = {}
    for graph in reader_graphs.stored_graphs(db):
        sides.setdefault((graph.step, graph.rank), set()).add(graph.side)
    return [part for part, found in sorted(sides.items()) if {TARGET_SIDE, GOLDEN_SIDE} <= found]


def propose_all(
    db: VisDb, step: int | None = None, rank: int | None = None, under: str | None = None
) -> Proposals:
    """Proposals of every (step, rank) (or those given), users' rejections left out."""
    if not db.config().compare:
        raise GraphboardError(
            f"{db.path.name}: a build of one run, not a compare: nothing to match"
        )
    parts = [
        (s, r)
        for s, r in graph_parts(db)
        if (step is None or s == step) and (rank is None or r == rank)
    ]
    if not parts:
        raise GraphboardError(
            f"{db.path.name}: no compare graph at step {step if step is not None else 'any'}, "
            f"rank {rank if rank is not None else 'any'}"
        )
    found = Proposals([], [])
    for s, r in parts:
        one = propose(db, s, r, rejected=rejected(db, s, r), under=under)
        found.suggestions.extend(one.suggestions)
        found.fused.extend(one.fused)
    return found


def grey_counts(db: VisDb, step: int | None = None, rank: int | None = None) -> tuple[int, int]:
    """Unmatched (grey) nodes of the target and the golden over the compare graphs of ``step``
    and ``rank`` (or all), users' matches applied: what proposals could pair."""
    counts = {TARGET_SIDE: 0, GOLDEN_SIDE: 0}
    for s, r in graph_parts(db):
        if (step is None or s == step) and (rank is None or r == rank):
            for side in counts:
                matched = overlay.graph_view(db, GraphKey(side, s, r)).columns["matched"]
                counts[side] += int((np.asarray(matched) != 1).sum())
    return counts[TARGET_SIDE], counts[GOLDEN_SIDE]


def why_none(grey: tuple[int, int], below: int, min_confidence: float) -> str:
    """Why no proposal is listed, for a command's summary line."""
    target, golden = grey
    if target == 0:
        return "every target node is matched: nothing to propose"
    if below:
        return (
            f"{below} proposal(s) for the {target} grey target node(s) fall below "
            f"{min_confidence} (a lower --min-confidence lists them)"
        )
    if golden == 0:
        return (
            f"the {target} grey target node(s) have no unmatched golden node to pair with: "
            "the golden run has no counterpart for them (nodes only the target runs)"
        )
    return (
        f"none of the {target} grey target node(s) has a candidate among the {golden} grey "
        "golden node(s) of the same kind and direction under a matched parent, or within one "
        "level of one (or users rejected them)"
    )


def above(found: Proposals, min_confidence: float) -> tuple[list[Suggestion], list[Fused]]:
    return (
        [s for s in found.suggestions if s.confidence >= min_confidence],
        [f for f in found.fused if f.confidence >= min_confidence],
    )


def accept(
    path: Path, settings: MatchingSettings, suggestions: Sequence[Suggestion]
) -> list[matching.Outcome]:
    """Record ``suggestions`` as manual matches: one import action per (step, rank), parents
    before children as proposed; a pair the planner refuses is reported in its outcome."""
    by_part: dict[tuple[int, int], dict[str, str]] = {}
    for item in suggestions:
        by_part.setdefault((item.step, item.rank), {})[item.target] = item.golden
    return [
        matching.import_config(path, settings, step, rank, config, descendants=False, twins=False)
        for (step, rank), config in by_part.items()
    ]


def accept_in_command(
    path: Path, settings: MatchingSettings, suggestions: Sequence[Suggestion]
) -> list[matching.Outcome]:
    """:func:`accept` for a command line: matching's refusals (a read-only file, matching
    turned off) become the command's one-line error."""
    try:
        return accept(path, settings, suggestions) if suggestions else []
    except Refusal as error:
        raise GraphboardError(str(error)) from None


@contextmanager
def local_settings(path: Path) -> Iterator[FileSettings]:
    """Settings of a command run on one file: its folder as the data dir, derived files of
    msprobe's in a temporary folder (a command leaves nothing beside the file but its writes)."""
    with tempfile.TemporaryDirectory(prefix="graphboard-suggest-") as scratch:
        yield FileSettings(path.parent.expanduser().resolve(), Path(scratch) / "cache")


def auto_match(path: Path, min_confidence: float) -> tuple[int, int]:
    """graph_build --auto-match: accept the proposals at or above ``min_confidence`` into the
    file just built; (pairs matched, proposals refused)."""
    with local_settings(path) as settings:
        with open_vis_db(path, settings.cache_dir) as db:
            chosen, _fused = above(propose_all(db), min_confidence)
        outcomes = accept_in_command(path, settings, chosen)
    return sum(len(o.pairs) for o in outcomes), sum(len(o.skipped) for o in outcomes)
