"""The matching requests: match, unmatch, apply a .vis.config, undo. Each is one write
transaction and one entry of the file's match history."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from graphboard.matching.access import MatchingSettings, writing
from graphboard.matching.outcome import MatchFailure, Outcome, Skipped
from graphboard.matching.planner import Planner
from graphboard.refusals import Conflict
from graphboard.store import matches
from graphboard.store.reader import VisDb, manual_matches


def _record(
    db: VisDb,
    planner: Planner,
    kind: str,
    pair: tuple[str, str] | None,
    options: dict[str, Any],
    outcome: Outcome,
) -> int:
    return manual_matches.record_action(
        db,
        kind,
        planner.step,
        planner.rank,
        pair,
        options,
        planner.scorer.rows,
        [(item.target, item.golden) for item in outcome.pairs],
    )


def pair(
    kind: Literal["match", "unmatch"],
    path: Path,
    settings: MatchingSettings,
    step: int,
    rank: int,
    target: str,
    golden: str,
    *,
    descendants: bool,
    twins: bool,
) -> Outcome:
    """Match (or unmatch) a target node and a golden node, with their twins and optionally
    their descendants; a refused first pair fails the request, nothing is written."""
    with writing(path, settings) as db:
        planner = Planner(db, step, rank, settings.data_root)
        plan = planner.match if kind == "match" else planner.unmatch
        try:
            outcome = plan(target, golden, descendants=descendants, twins=twins)
        except MatchFailure as failure:
            raise failure.as_refusal() from None
        options = {"descendants": descendants, "twins": twins}
        outcome.action_id = _record(db, planner, kind, (target, golden), options, outcome)
    return outcome


def import_config(
    path: Path,
    settings: MatchingSettings,
    step: int,
    rank: int,
    config: Mapping[str, str],
    *,
    descendants: bool,
    twins: bool,
) -> Outcome:
    """Apply an msprobe ``.vis.config`` ({target: golden}): every entry a match of its own in
    one action; entries that cannot be matched are reported, not fatal."""
    with writing(path, settings) as db:
        planner = Planner(db, step, rank, settings.data_root)
        outcome = Outcome(None)
        for target, golden in config.items():
            rows, claimed = len(planner.scorer.rows), set(planner.claimed)
            try:
                found = planner.match(target, golden, descendants=descendants, twins=twins)
            except MatchFailure as failure:
                del planner.scorer.rows[rows:]  # nothing of a refused entry is kept
                planner.claimed = claimed
                outcome.skipped.append(Skipped(target, golden, failure.code, failure.message))
                continue
            outcome.pairs.extend(found.pairs)
            outcome.skipped.extend(found.skipped)
        if outcome.pairs:
            options = {"descendants": descendants, "twins": twins, "entries": len(config)}
            outcome.action_id = _record(db, planner, "import", None, options, outcome)
    return outcome


def undo(
    path: Path, settings: MatchingSettings, step: int, rank: int
) -> tuple[matches.Action, int]:
    """Undo the latest action of a (step, rank): its nodes get back their previous state."""
    with writing(path, settings) as db:
        undone = manual_matches.undo_last_action(db, step, rank)
        if undone is None:
            raise Conflict(f"nothing to undo for step {step}, rank {rank}", code="nothing_to_undo")
    return undone
