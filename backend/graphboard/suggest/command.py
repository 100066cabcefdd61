"""``graphboard suggest-matches FILE.vis.db``: proposals for the grey nodes of a compare.

Each proposal pairs a target node with a golden node, with a confidence in [0, 1] and the
reason. ``--apply`` records those at or above ``--min-confidence`` as manual matches (one
import action per step and rank: undo and history as in the viewer); ``--export`` writes
them as msprobe's ``.vis.config``. Fused nodes (one node for several on the other side) are
listed, never paired. Exit 0, or 1 with one line on stderr for a file it cannot use.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from graphboard.errors import GraphboardError
from graphboard.executor import Executor
from graphboard.store.reader import open_vis_db
from graphboard.suggest.apply import (
    above,
    accept_in_command,
    grey_counts,
    local_settings,
    propose_all,
    why_none,
)
from graphboard.suggest.results import DEFAULT_MIN_CONFIDENCE, Fused, Suggestion

PROG = "graphboard suggest-matches"


def confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a confidence from 0 to 1, not {text!r}")
    return value


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "suggest-matches",
        help="propose pairs for a compare's unmatched nodes, with a confidence and a reason",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("file", type=Path, metavar="FILE.vis.db", help="a compare's .vis.db")
    parser.add_argument("--step", type=int, metavar="S", help="this step's graphs only")
    parser.add_argument("--rank", type=int, metavar="R", help="this rank's graphs only")
    parser.add_argument(
        "--min-confidence",
        type=confidence,
        metavar="C",
        default=DEFAULT_MIN_CONFIDENCE,
        help=f"list (and apply) proposals at or above this (default {DEFAULT_MIN_CONFIDENCE})",
    )
    parser.add_argument("--apply", action="store_true", help="record them as manual matches")
    parser.add_argument(
        "--export", type=Path, metavar="FILE.vis.config", help="write them as msprobe's .vis.config"
    )
    parser.add_argument("--json", action="store_true", help='print {"suggestions": [...]}')
    parser.set_defaults(run=run)


def _as_json(item: Suggestion | Fused) -> dict[str, Any]:
    return {
        "step": item.step,
        "rank": item.rank,
        "target": item.target if isinstance(item, Suggestion) else list(item.target),
        "golden": item.golden if isinstance(item, Suggestion) else list(item.golden),
        "confidence": item.confidence,
        "reason": item.reason,
    }


def _export(path: Path, chosen: list[Suggestion]) -> None:
    parts = {(item.step, item.rank) for item in chosen}
    if len(parts) > 1:
        raise GraphboardError(
            f"--export writes one graph's .vis.config, and the proposals span {len(parts)} "
            "steps/ranks: give --step and --rank"
        )
    try:
        path.write_text(json.dumps({item.target: item.golden for item in chosen}, indent=2))
    except OSError as error:
        raise GraphboardError(f"{path}: cannot write: {error.strerror or error}") from None


def run(args: argparse.Namespace) -> int:
    path: Path = args.file
    if not path.is_file():
        raise GraphboardError(f"{path}: no such file")
    with local_settings(path) as settings:
        with open_vis_db(path, settings.cache_dir) as db:
            # a command, a process that does nothing else: its walk runs with the collector
            # paused (it makes no cycles; the server's requests run without the pause)
            found = Executor(processes=False).call(propose_all, db, args.step, args.rank)
            chosen, fused = above(found, args.min_confidence)
            why = (
                ""
                if chosen or fused
                else f": {why_none(grey_counts(db, args.step, args.rank), len(found.suggestions), args.min_confidence)}"
            )
        if args.export is not None:
            _export(args.export, chosen)
        outcomes = accept_in_command(path, settings, chosen) if args.apply else []
    matched = sum(len(outcome.pairs) for outcome in outcomes)
    refused = [
        {"target": item.target, "golden": item.golden, "reason": item.reason}
        for outcome in outcomes
        for item in outcome.skipped
    ]
    if args.json:
        shown: dict[str, Any] = {
            "suggestions": [_as_json(item) for item in chosen],
            "fused": [_as_json(item) for item in fused],
        }
        if args.apply:
            shown["applied"] = {"matched": matched, "refused": refused}
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return 0
    for item in chosen:
        print(f"{item.confidence:.2f}  {item.target}  ->  {item.golden}  ({item.reason})")
    for group in fused:
        print(
            f"{group.confidence:.2f}  fused: {', '.join(group.target)}  ->  "
            f"{', '.join(group.golden)}  ({group.reason})"
        )
    print(
        f"{PROG}: {len(chosen)} proposal(s) at or above {args.min_confidence}, "
        f"{len(fused)} fused group(s){why}",
        file=sys.stderr,
    )
    if args.apply:
        print(
            f"{PROG}: matched {matched} node(s), {len(refused)} refused",
            file=sys.stderr,
        )
    return 0
