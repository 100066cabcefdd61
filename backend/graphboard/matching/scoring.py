"""Scoring one pair as the builder would, and the overlay rows that record a (un)pairing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from graphboard.compare.engine import compare_pair
from graphboard.compare.result import DataMode, level_of_precision
from graphboard.dump.records import Param
from graphboard.graph.model import Node, NodeType
from graphboard.matching.outcome import MatchFailure, ScoredPair
from graphboard.store.display import node_display
from graphboard.store.matches import OverlayRow
from graphboard.store.param_parse import split_fields
from graphboard.store.reader import GraphKey, NodeSummary, VisDb, node_data, tree


def _node_type(value: int) -> NodeType:
    try:
        return NodeType(value)
    except ValueError:
        return NodeType.MODULE


def tensor_dir(db: VisDb, data_root: Path, stored_dir: str | None, side: str, name: str) -> str:
    """Where a node's tensor files are: the stored ``dump_data_dir``, absolute, or relative to
    the .vis.db's folder or one of its parents up to the data dir (msprobe stores it relative
    to where graph_visualize ran)."""
    if not stored_dir:
        raise MatchFailure(
            "missing_tensor_file", f"{name} ({side}) records no dump_data_dir for its tensors"
        )
    candidate = Path(stored_dir)
    if candidate.is_absolute():
        return str(candidate)
    folder = db.path.parent
    while True:
        if (folder / candidate).is_dir():
            return str(folder / candidate)
        if folder == data_root or folder.parent == folder:
            return str(db.path.parent / candidate)
        folder = folder.parent


def check_tensor_files(params: list[Param], directory: str, side: str, name: str) -> None:
    """Refuse up front, naming the files, rather than score a pair as 'unsupported'."""
    missing = [
        param.data_name
        for param in params
        if param.is_tensor and param.data_name and not (Path(directory) / param.data_name).is_file()
    ]
    if missing:
        shown = ", ".join(str(item) for item in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise MatchFailure(
            "missing_tensor_file",
            f"{name} ({side}): tensor file(s) missing from {directory}: {shown}{more}",
        )


def merged_display(stored: dict[str, Any], shown: dict[str, dict[str, str]]) -> str:
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


def display_without_comparison(stored: dict[str, Any]) -> str:
    return orjson.dumps(
        {
            name: split_fields(fields)[0] if isinstance(fields, dict) else fields
            for name, fields in stored.items()
        }
    ).decode()


class PairScorer:
    """Scores target/golden pairs of one (step, rank) and keeps the overlay rows to write."""

    def __init__(
        self, db: VisDb, target_key: GraphKey, golden_key: GraphKey, data_root: Path
    ) -> None:
        self.db = db
        self.target_key, self.golden_key = target_key, golden_key
        self.mode: DataMode | None = db.config().mode
        self.data_root = data_root
        self.rows: list[OverlayRow] = []

    def score(self, t: NodeSummary, g: NodeSummary) -> ScoredPair:
        stored_t = node_data.stored_data(self.db, self.target_key, t.name)
        stored_g = node_data.stored_data(self.db, self.golden_key, g.name)
        assert stored_t is not None and stored_g is not None
        target_params = node_data.params(self.db, self.target_key, t.name) or []
        golden_params = node_data.params(self.db, self.golden_key, g.name) or []
        target_dir = golden_dir = ""
        if self.mode is DataMode.TENSOR:
            target_dir = tensor_dir(
                self.db, self.data_root, stored_t[2], self.target_key.side, t.name
            )
            golden_dir = tensor_dir(
                self.db, self.data_root, stored_g[2], self.golden_key.side, g.name
            )
            check_tensor_files(target_params, target_dir, self.target_key.side, t.name)
            check_tensor_files(golden_params, golden_dir, self.golden_key.side, g.name)
        node_type = _node_type(t.node_type)
        has_record = bool(stored_t[0] or stored_t[1])  # no dump record: nothing to score
        target = Node(t.name, node_type, params=target_params if has_record else None)
        golden = Node(g.name, node_type, params=golden_params)
        comparison = (
            compare_pair(target, golden, self.mode, target_dir, golden_dir)
            if self.mode is not None
            else None
        )
        precision = comparison.precision_index if comparison is not None else None
        level = None if comparison is None or comparison.level is None else int(comparison.level)
        if node_type is NodeType.API_COLLECTION:  # as the builder: its children's worst index
            children = tree.children(self.db, self.target_key, t.name).items
            precision = max((child.precision_index or 0.0 for child in children), default=0.0)
            found = level_of_precision(precision)
            level = None if found is None else int(found)
        introduced = comparison.introduced_level if comparison is not None else None
        inputs, outputs = node_display(target_params, t.name, self.mode, comparison)
        self.rows.append(
            _overlay_row(
                self.target_key,
                t,
                g,
                precision_index=precision,
                level=level,
                introduced=int(introduced) if introduced is not None else 0,
                input_data=merged_display(stored_t[0], inputs),
                output_data=merged_display(stored_t[1], outputs),
            )
        )
        self.rows.append(_overlay_row(self.golden_key, g, t))
        return ScoredPair(t.name, g.name, precision, level)

    def unpair(self, t: NodeSummary, g: NodeSummary) -> ScoredPair:
        stored = node_data.stored_data(self.db, self.target_key, t.name)
        assert stored is not None
        self.rows.append(
            _overlay_row(
                self.target_key,
                t,
                None,
                input_data=display_without_comparison(stored[0]),
                output_data=display_without_comparison(stored[1]),
            )
        )
        self.rows.append(_overlay_row(self.golden_key, g, None))
        return ScoredPair(t.name, g.name, None, None)


def _overlay_row(
    key: GraphKey,
    node: NodeSummary,
    counterpart: NodeSummary | None,
    *,
    precision_index: float | None = None,
    level: int | None = None,
    introduced: int = 0,
    input_data: str | None = None,
    output_data: str | None = None,
) -> OverlayRow:
    """A node's state after a manual (un)match: paired with ``counterpart`` (None: with
    nobody). The scores are the target's to carry; a golden row only learns its counterpart."""
    return OverlayRow(
        data_source=key.side,
        step=key.step,
        rank=key.rank,
        node_name=node.name,
        node_order=node.node_order,
        manual=True,
        matched=counterpart is not None,
        counterpart=counterpart.name if counterpart is not None else None,
        counterpart_order=counterpart.node_order if counterpart is not None else None,
        precision_index=precision_index,
        level=level,
        introduced=introduced,
        input_data=input_data,
        output_data=output_data,
    )
