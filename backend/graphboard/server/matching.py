"""Manual matching: pair (or unpair) one target node with one golden node, and optionally
their forward/backward twins and their descendants, scored by the builder's own engine.

Each request is one write transaction (``BEGIN IMMEDIATE``: concurrent writers queue, readers
carry on) that reads the current state, decides every pair, scores it with
:func:`graphboard.compare.engine.compare_pair` on parameters rebuilt from the stored rows, and
stores the result in graphboard's overlay tables (:mod:`graphboard.store.matches`) with an undo
record. ``tb_*`` rows are never modified. Why a pair was refused is said precisely.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from collections import defaultdict, deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from graphboard.compare.engine import compare_pair
from graphboard.compare.result import DataMode
from graphboard.dump.records import Param
from graphboard.graph.model import API_COLLECTION_PREFIX, Node, NodeType
from graphboard.graph.names import swap_direction
from graphboard.server.errors import ApiError, Conflict, Forbidden, NotFound
from graphboard.server.settings import Settings
from graphboard.store import matches, sidecar
from graphboard.store.display import node_display
from graphboard.store.matches import OverlayRow
from graphboard.store.param_parse import split_fields
from graphboard.store.reader import GraphKey, NodeSummary, Source, VisDb, open_vis_db

NPU, BENCH = "NPU", "Bench"
_MODULE = re.compile(
    r"^(?:Module|Cell)\.(.+)\.([^.]+)\.(forward|backward|parameters_grad)(?:\.\d+)?$"
)


class MatchFailure(Exception):
    """Why one pair cannot be (un)matched: a top-level failure becomes an HTTP error, a twin's
    or descendant's is reported as skipped."""

    def __init__(self, code: str, message: str, *, status: int = 409) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status

    def as_api_error(self) -> ApiError:
        if self.status == 404:
            return NotFound(self.message, code=self.code)
        return Conflict(self.message, code=self.code)


@dataclass(slots=True)
class ScoredPair:
    target: str
    golden: str
    precision_index: float | None
    level: int | None


@dataclass(slots=True)
class Skipped:
    target: str
    golden: str | None
    code: str
    reason: str


@dataclass(slots=True)
class Outcome:
    action_id: int | None
    pairs: list[ScoredPair] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


# --- write access --------------------------------------------------------------------------


def _read_only_reason(path: Path) -> str | None:
    for item, what in ((path, "the file"), (path.parent, "the folder holding it")):
        mode = item.stat().st_mode
        if not os.access(item, os.W_OK) or not stat.S_IMODE(mode) & 0o222:
            return (
                f"{what} is read-only"
                if item == path
                else f"{what} is read-only (SQLite writes a journal file beside the database)"
            )
    return None


@contextmanager
def writing(path: Path, settings: Settings) -> Iterator[VisDb]:
    """The file open for one write transaction; committed if the block succeeds."""
    if not settings.allow_matching:
        raise Forbidden("manual matching is turned off on this server", code="matching_disabled")
    reason = _read_only_reason(path)
    if reason is not None:
        raise Forbidden(f"{path.name}: {reason}; manual matches cannot be saved", code="read_only")
    with open_vis_db(path, settings.cache_dir, writable=True) as db:
        if not db.config().compare:
            raise Conflict(
                f"{path.name} is a build of one run, not a compare: there is nothing to match",
                code="not_a_compare",
            )
        db._gb_conn()  # derive an msprobe file's sidecar before the write changes its stamp
        sidecar_before = db.sidecar_path
        matches.create_tables(db.conn)
        try:
            db.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise Forbidden(f"{path.name}: cannot write: {error}", code="read_only") from None
        try:
            db.refresh()  # what committed while this request waited for the lock
            yield db
            db.conn.execute("COMMIT")
        except BaseException:
            db.conn.execute("ROLLBACK")
            raise
        db.refresh()
    if db.source is Source.MSPROBE and sidecar_before is not None:
        sidecar.restamp(sidecar_before, path, settings.cache_dir)


# --- who pairs with whom -------------------------------------------------------------------


def short_name(name: str, node_type: int) -> str:
    """What a child is called inside its parent, for pairing descendants by name and order:
    a module's attribute (``conv1``), an API's function (``Functional.linear``)."""
    if node_type == NodeType.MODULE:
        parsed = _MODULE.match(name)
        if parsed is not None:
            return f"{parsed.group(1).rsplit('.', 1)[-1]}.{parsed.group(3)}"
        return name
    if node_type == NodeType.API:
        parts = name.split(".")
        direction = parts[-1] if parts[-1] in ("forward", "backward") else ""
        return ".".join(parts[:2]) + "." + direction
    if name.startswith(API_COLLECTION_PREFIX):
        return API_COLLECTION_PREFIX
    return name


def _node_type(value: int) -> NodeType:
    try:
        return NodeType(value)
    except ValueError:
        return NodeType.MODULE


def _type_label(value: int) -> str:
    return {0: "a module", 1: "an API", 9: "an API collection"}.get(value, f"of type {value}")


class Matcher:
    """Decides and scores the pairs of one action against the current state of one file."""

    def __init__(self, db: VisDb, step: int, rank: int, data_root: Path) -> None:
        self.db = db
        self.step, self.rank = step, rank
        self.npu = GraphKey(NPU, step, rank)
        self.bench = GraphKey(BENCH, step, rank)
        for key in (self.npu, self.bench):
            if not db.has_graph(key):
                raise NotFound(
                    f"the file has no {key.side} graph for step {step}, rank {rank}",
                    code="unknown_graph_part",
                )
        self.config = db.config()
        self.mode = self.config.mode
        self.data_root = data_root
        self.claimed: set[tuple[str, str]] = set()  # (side, name) (un)paired by this action
        self.rows: list[OverlayRow] = []

    def _summary(self, key: GraphKey, name: str) -> NodeSummary:
        found = self.db.summary(key, name)
        if found is None:
            side = "target" if key.side == NPU else "golden"
            raise MatchFailure(
                "unknown_node", f"no {side} ({key.side}) node named {name!r}", status=404
            )
        return found

    # --- match -----------------------------------------------------------------------------

    def check_match(self, target: str, golden: str) -> tuple[NodeSummary, NodeSummary]:
        t = self._summary(self.npu, target)
        g = self._summary(self.bench, golden)
        if t.node_type != g.node_type:
            raise MatchFailure(
                "type_mismatch",
                f"{target} is {_type_label(t.node_type)} but {golden} is {_type_label(g.node_type)}; "
                "only nodes of the same type can be matched",
            )
        for node, side in ((t, NPU), (g, BENCH)):
            if (side, node.name) in self.claimed:
                raise MatchFailure(
                    "already_matched", f"{node.name} is already paired in this request"
                )
            if node.matched:
                raise MatchFailure(
                    "already_matched",
                    f"{node.name} ({side}) is already matched with {node.counterpart}; unmatch it first",
                )
        return t, g

    def match(self, target: str, golden: str, *, descendants: bool, twins: bool) -> Outcome:
        outcome = Outcome(None)
        first = self.check_match(target, golden)
        todo: deque[tuple[NodeSummary, NodeSummary]] = deque([first])
        self._claim(*first)
        if twins:
            twin = self._twin(first[0].name, first[1].name, outcome, self.check_match)
            if twin is not None:
                todo.append(twin)
                self._claim(*twin)
        while todo:
            t, g = todo.popleft()
            try:
                outcome.pairs.append(self._score(t, g))
            except MatchFailure as failure:
                if (t.name, g.name) == (first[0].name, first[1].name):
                    raise
                outcome.skipped.append(Skipped(t.name, g.name, failure.code, failure.message))
                continue
            if descendants:
                for pair in self._child_pairs(t, g, outcome):
                    self._claim(*pair)
                    todo.append(pair)
        return outcome

    def _claim(self, t: NodeSummary, g: NodeSummary) -> None:
        self.claimed.add((NPU, t.name))
        self.claimed.add((BENCH, g.name))

    def _twin(
        self, target: str, golden: str, outcome: Outcome, check: Any
    ) -> tuple[NodeSummary, NodeSummary] | None:
        """The forward/backward twin pair, if both twins exist and can be (un)paired."""
        target_twin, golden_twin = swap_direction(target), swap_direction(golden)
        if target_twin is None or golden_twin is None:
            return None
        have_target = self.db.summary(self.npu, target_twin) is not None
        have_golden = self.db.summary(self.bench, golden_twin) is not None
        if not (have_target or have_golden):
            return None
        if have_target != have_golden:
            missing = golden_twin if have_target else target_twin
            outcome.skipped.append(
                Skipped(target_twin, golden_twin, "no_twin", f"{missing} does not exist")
            )
            return None
        try:
            pair: tuple[NodeSummary, NodeSummary] = check(target_twin, golden_twin)
        except MatchFailure as failure:
            outcome.skipped.append(Skipped(target_twin, golden_twin, failure.code, failure.message))
            return None
        return pair

    def _child_pairs(
        self, t: NodeSummary, g: NodeSummary, outcome: Outcome
    ) -> list[tuple[NodeSummary, NodeSummary]]:
        """Unmatched children of a new pair, paired by (short name, type) in call order."""
        waiting: dict[tuple[str, int], deque[NodeSummary]] = defaultdict(deque)
        for child in self.db.children(self.bench, g.name).items:
            if not child.matched and (BENCH, child.name) not in self.claimed:
                waiting[(short_name(child.name, child.node_type), child.node_type)].append(child)
        pairs = []
        for child in self.db.children(self.npu, t.name).items:
            if child.matched or (NPU, child.name) in self.claimed:
                continue
            queue = waiting.get((short_name(child.name, child.node_type), child.node_type))
            if queue:
                pairs.append((child, queue.popleft()))
        return pairs

    def _tensor_dir(self, stored_dir: str | None, side: str, name: str) -> str:
        """Where a node's tensor files are: the stored dump_data_dir, absolute or relative to
        the .vis.db's folder or one of its parents up to the data dir."""
        if not stored_dir:
            raise MatchFailure(
                "missing_tensor_file", f"{name} ({side}) records no dump_data_dir for its tensors"
            )
        candidate = Path(stored_dir)
        if candidate.is_absolute():
            return str(candidate)
        folder = self.db.path.parent
        while True:
            if (folder / candidate).is_dir():
                return str(folder / candidate)
            if folder == self.data_root or folder.parent == folder:
                return str(self.db.path.parent / candidate)
            folder = folder.parent

    def _check_tensor_files(
        self, params: list[Param], tensor_dir: str, side: str, name: str
    ) -> None:
        missing = [
            param.data_name
            for param in params
            if param.is_tensor
            and param.data_name
            and not (Path(tensor_dir) / param.data_name).is_file()
        ]
        if missing:
            shown = ", ".join(str(item) for item in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise MatchFailure(
                "missing_tensor_file",
                f"{name} ({side}): tensor file(s) missing from {tensor_dir}: {shown}{more}",
            )

    def _score(self, t: NodeSummary, g: NodeSummary) -> ScoredPair:
        stored_t = self.db.stored_data(self.npu, t.name)
        stored_g = self.db.stored_data(self.bench, g.name)
        assert stored_t is not None and stored_g is not None
        target_params = self.db.params(self.npu, t.name) or []
        golden_params = self.db.params(self.bench, g.name) or []
        target_dir = golden_dir = ""
        if self.mode is DataMode.TENSOR:
            target_dir = self._tensor_dir(stored_t[2], NPU, t.name)
            golden_dir = self._tensor_dir(stored_g[2], BENCH, g.name)
            self._check_tensor_files(target_params, target_dir, NPU, t.name)
            self._check_tensor_files(golden_params, golden_dir, BENCH, g.name)
        node_type = _node_type(t.node_type)
        target_node = Node(
            t.name, node_type, params=target_params if stored_t[0] or stored_t[1] else None
        )
        golden_node = Node(g.name, node_type, params=golden_params)
        comparison = (
            compare_pair(target_node, golden_node, self.mode, target_dir, golden_dir)
            if self.mode is not None
            else None
        )
        precision = comparison.precision_index if comparison is not None else None
        if node_type is NodeType.API_COLLECTION:  # as the builder: its children's worst index
            precision = max(
                (
                    child.precision_index or 0.0
                    for child in self.db.children(self.npu, t.name).items
                ),
                default=0.0,
            )
        level = None if comparison is None or comparison.level is None else int(comparison.level)
        if node_type is NodeType.API_COLLECTION:
            from graphboard.compare.engine import level_of_precision

            found = level_of_precision(precision)
            level = None if found is None else int(found)
        introduced = comparison.introduced_level if comparison is not None else None
        inputs, outputs = node_display(target_params, t.name, self.mode, comparison)
        self.rows.append(
            OverlayRow(
                NPU,
                self.step,
                self.rank,
                t.name,
                t.node_order,
                True,
                True,
                g.name,
                g.node_order,
                precision,
                level,
                int(introduced) if introduced is not None else 0,
                _merged(stored_t[0], inputs),
                _merged(stored_t[1], outputs),
            )
        )
        self.rows.append(
            OverlayRow(
                BENCH,
                self.step,
                self.rank,
                g.name,
                g.node_order,
                True,
                True,
                t.name,
                t.node_order,
                None,
                None,
                0,
                None,
                None,
            )
        )
        return ScoredPair(t.name, g.name, precision, level)

    # --- unmatch ---------------------------------------------------------------------------

    def check_unmatch(self, target: str, golden: str) -> tuple[NodeSummary, NodeSummary]:
        t = self._summary(self.npu, target)
        g = self._summary(self.bench, golden)
        if not t.matched or t.counterpart != golden:
            now = f"matched with {t.counterpart}" if t.matched else "not matched"
            raise MatchFailure("not_matched", f"{target} is not matched with {golden} ({now})")
        return t, g

    def unmatch(self, target: str, golden: str, *, descendants: bool, twins: bool) -> Outcome:
        outcome = Outcome(None)
        first = self.check_unmatch(target, golden)
        pairs = [first]
        if twins:
            twin = self._twin(target, golden, outcome, self.check_unmatch)
            if twin is not None:
                pairs.append(twin)
        if descendants:
            for t, _g in list(pairs):
                pairs.extend(self._matched_descendants(t))
        seen: set[str] = set()
        for t, g in pairs:
            if t.name in seen:
                continue
            seen.add(t.name)
            self._unpair(t, g)
            outcome.pairs.append(ScoredPair(t.name, g.name, None, None))
        return outcome

    def _matched_descendants(self, top: NodeSummary) -> list[tuple[NodeSummary, NodeSummary]]:
        found: list[tuple[NodeSummary, NodeSummary]] = []
        todo = deque([top.name])
        while todo:
            for child in self.db.children(self.npu, todo.popleft()).items:
                todo.append(child.name)
                if child.matched and child.counterpart:
                    golden = self.db.summary(self.bench, child.counterpart)
                    if golden is not None and golden.counterpart == child.name:
                        found.append((child, golden))
        return found

    def _unpair(self, t: NodeSummary, g: NodeSummary) -> None:
        stored = self.db.stored_data(self.npu, t.name)
        assert stored is not None
        self.rows.append(
            OverlayRow(
                NPU,
                self.step,
                self.rank,
                t.name,
                t.node_order,
                True,
                False,
                None,
                None,
                None,
                None,
                0,
                _without_comparison(stored[0]),
                _without_comparison(stored[1]),
            )
        )
        self.rows.append(
            OverlayRow(
                BENCH,
                self.step,
                self.rank,
                g.name,
                g.node_order,
                True,
                False,
                None,
                None,
                None,
                None,
                0,
                None,
                None,
            )
        )


def _merged(stored: dict[str, Any], shown: dict[str, dict[str, str]]) -> str:
    """The stored dicts with their comparison fields replaced by the new ones: the parameter's
    own fields stay exactly as stored (msprobe's or ours)."""
    merged: dict[str, Any] = {}
    for name, fields in stored.items():
        own = split_fields(fields)[0] if isinstance(fields, dict) else fields
        fresh = shown.get(name)
        merged[name] = {**own, **split_fields(fresh)[1]} if fresh is not None else own
    for name, fields in shown.items():
        merged.setdefault(name, fields)
    return orjson.dumps(merged).decode()


def _without_comparison(stored: dict[str, Any]) -> str:
    return orjson.dumps(
        {
            name: split_fields(fields)[0] if isinstance(fields, dict) else fields
            for name, fields in stored.items()
        }
    ).decode()


# --- actions -------------------------------------------------------------------------------


def _record(
    db: VisDb,
    matcher: Matcher,
    kind: str,
    target: str | None,
    golden: str | None,
    options: dict[str, Any],
    outcome: Outcome,
) -> int:
    action_id = matches.start_action(
        db.conn, kind, matcher.step, matcher.rank, target, golden, options
    )
    matches.put_overlay(db.conn, action_id, matcher.rows)
    matches.finish_action(
        db.conn, action_id, [(pair.target, pair.golden) for pair in outcome.pairs]
    )
    return action_id


def match(
    path: Path,
    settings: Settings,
    step: int,
    rank: int,
    target: str,
    golden: str,
    *,
    descendants: bool,
    twins: bool,
) -> Outcome:
    with writing(path, settings) as db:
        matcher = Matcher(db, step, rank, settings.data_root)
        try:
            outcome = matcher.match(target, golden, descendants=descendants, twins=twins)
        except MatchFailure as failure:
            raise failure.as_api_error() from None
        options = {"descendants": descendants, "twins": twins}
        outcome.action_id = _record(db, matcher, "match", target, golden, options, outcome)
    return outcome


def unmatch(
    path: Path,
    settings: Settings,
    step: int,
    rank: int,
    target: str,
    golden: str,
    *,
    descendants: bool,
    twins: bool,
) -> Outcome:
    with writing(path, settings) as db:
        matcher = Matcher(db, step, rank, settings.data_root)
        try:
            outcome = matcher.unmatch(target, golden, descendants=descendants, twins=twins)
        except MatchFailure as failure:
            raise failure.as_api_error() from None
        options = {"descendants": descendants, "twins": twins}
        outcome.action_id = _record(db, matcher, "unmatch", target, golden, options, outcome)
    return outcome


def import_config(
    path: Path,
    settings: Settings,
    step: int,
    rank: int,
    config: Mapping[str, str],
    *,
    descendants: bool,
    twins: bool,
) -> Outcome:
    """Apply an msprobe ``.vis.config`` ({target: golden}): each entry a match of its own
    inside one action; entries that cannot be matched are reported, not fatal."""
    with writing(path, settings) as db:
        matcher = Matcher(db, step, rank, settings.data_root)
        outcome = Outcome(None)
        for target, golden in config.items():
            rows_before = len(matcher.rows)
            try:
                found = matcher.match(target, golden, descendants=descendants, twins=twins)
            except MatchFailure as failure:
                del matcher.rows[rows_before:]
                outcome.skipped.append(Skipped(target, golden, failure.code, failure.message))
                continue
            outcome.pairs.extend(found.pairs)
            outcome.skipped.extend(found.skipped)
        if outcome.pairs:
            options = {"descendants": descendants, "twins": twins, "entries": len(config)}
            outcome.action_id = _record(db, matcher, "import", None, None, options, outcome)
    return outcome


def undo(path: Path, settings: Settings, step: int, rank: int) -> tuple[matches.Action, int]:
    with writing(path, settings) as db:
        last = matches.last_action(db.conn, step, rank) if db.has_overlay else None
        if last is None:
            raise Conflict(f"nothing to undo for step {step}, rank {rank}", code="nothing_to_undo")
        restored = matches.undo_action(db.conn, last.id, step, rank)
        undone = matches.action(db.conn, last.id)
        assert undone is not None
    return undone, restored
