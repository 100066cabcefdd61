"""Reader results -> response models: colours, type names and the paired parameter rows."""

from __future__ import annotations

import json
from typing import Any, NamedTuple, cast

from graphboard.compare.engine import pair_params
from graphboard.dump.records import Param
from graphboard.graph.model import NodeType
from graphboard.server import schemas
from graphboard.store.param_parse import role_of, short_key, split_fields
from graphboard.store.reader import FileConfig, NodeRecord, NodeSummary

_TYPE_NAMES: dict[int, schemas.NodeTypeName] = {
    NodeType.MODULE: "module",
    NodeType.API: "api",
    NodeType.API_COLLECTION: "api_collection",
}


def node_out(summary: NodeSummary, side: str, config: FileConfig) -> schemas.NodeOut:
    return schemas.NodeOut(
        name=summary.name,
        parent=summary.parent,
        type=summary.node_type,
        type_name=_TYPE_NAMES.get(summary.node_type, "other"),
        node_order=summary.node_order,
        exec_order=summary.exec_order,
        depth=summary.depth,
        child_count=summary.child_count,
        micro_step=summary.micro_step,
        precision_index=summary.precision_index,
        level=cast(schemas.LevelName | None, summary.level),
        color=config.color_of(side, summary.precision_index, summary.matched),
        overflow=summary.overflow,
        matched=summary.matched,
        counterpart=summary.counterpart,
        introduced=cast(schemas.LevelName | None, summary.introduced),
        manual=summary.manual,
        modified=summary.modified,
        rollup=schemas.RollupOut(
            worst_level=cast(schemas.LevelName | None, summary.worst_level),
            worst_node=summary.worst_node,
            error_leaves=summary.error_leaves,
            warning_leaves=summary.warning_leaves,
            unmatched_leaves=summary.unmatched_leaves,
            overflow_leaves=summary.overflow_leaves,
            worst_overflow=cast(schemas.OverflowName | None, summary.worst_overflow),
        ),
    )


def nodes_out(summaries: list[NodeSummary], side: str, config: FileConfig) -> list[schemas.NodeOut]:
    return [node_out(summary, side, config) for summary in summaries]


def side_out(record: NodeRecord, side: str, config: FileConfig) -> schemas.NodeSideOut:
    return schemas.NodeSideOut(
        side=side,
        node=node_out(record.summary, side, config),
        stack=record.stack,
        parallel_merge_info=record.parallel_merge_info,
        matched_distributed=record.matched_distributed,
        dump_data_dir=record.dump_data_dir,
    )


class StoredParams(NamedTuple):
    """A node's name and its stored parameter dicts (``tb_nodes.input_data`` / ``output_data``)."""

    name: str
    input_data: dict[str, Any]
    output_data: dict[str, Any]


def _stored(node: StoredParams) -> dict[str, dict[str, Any]]:
    """Full parameter name -> stored dict, inputs then outputs."""
    stored: dict[str, dict[str, Any]] = {}
    for data in (node.input_data, node.output_data):
        for name, shown in data.items():
            if isinstance(shown, dict):
                stored[name] = shown
    return stored


def _params(node: StoredParams | None) -> list[Param]:
    """The node's parameters as pairing sees them: key and role (pair_params reads nothing
    else, and the rows show the stored dicts), in stored order, inputs first."""
    if node is None:
        return []
    params: list[Param] = []
    for in_output, data in ((False, node.input_data), (True, node.output_data)):
        for full_name, shown in data.items():
            if isinstance(shown, dict):
                key = short_key(node.name, full_name)
                params.append(Param(key, role_of(node.name, key, in_output)))
    return params


def _stored_params(record: NodeRecord | None) -> StoredParams | None:
    if record is None:
        return None
    return StoredParams(record.summary.name, record.input_data, record.output_data)


class SideFields(NamedTuple):
    name: str  # the full parameter name as stored
    fields: dict[str, Any]  # the parameter's own fields, as stored


class PairedParam(NamedTuple):
    """One target parameter and its golden twin as stored (either may be missing)."""

    role: str
    key: str
    paired_by: str | None  # None when one side is missing
    target: SideFields | None
    golden: SideFields | None
    comparison: dict[str, Any]  # the fields the compare stored on the target


def paired_rows(target: NodeRecord | None, golden: NodeRecord | None) -> list[schemas.ParamRowOut]:
    """Target and golden parameters side by side, paired by name as the builder pairs them
    (``compare.engine.pair_params``), by position only where the names cannot agree."""
    out: list[schemas.ParamRowOut] = []
    for row in paired_stored(_stored_params(target), _stored_params(golden)):
        result = row.comparison.get("Result")
        out.append(
            schemas.ParamRowOut(
                role=cast(Any, row.role),
                key=row.key,
                paired_by=cast(Any, row.paired_by),
                target=schemas.ParamFields(name=row.target.name, fields=row.target.fields)
                if row.target is not None
                else None,
                golden=schemas.ParamFields(name=row.golden.name, fields=row.golden.fields)
                if row.golden is not None
                else None,
                comparison=row.comparison,
                result=str(result) if result is not None else None,
                messages=_messages(row.comparison.get("Err_message")),
            )
        )
    return out


def paired_stored(target: StoredParams | None, golden: StoredParams | None) -> list[PairedParam]:
    """``paired_rows`` from the stored dicts alone, as plain tuples (the compare table pairs
    every node of a graph)."""
    target_params, golden_params = _params(target), _params(golden)
    target_stored = _stored(target) if target is not None else {}
    golden_stored = _stored(golden) if golden is not None else {}
    pairs: list[tuple[Param | None, Param | None, str | None]]
    if target is not None and golden is not None:
        rows = pair_params(target_params, golden_params)
        pairs = [(row.npu, row.bench, row.paired_by) for row in rows]
    else:
        pairs = [(param, None, None) for param in target_params] + [
            (None, param, None) for param in golden_params
        ]
    out: list[PairedParam] = []
    for npu, bench, paired_by in pairs:
        any_param = npu or bench
        assert any_param is not None
        target_fields = golden_fields = None
        comparison: dict[str, Any] = {}
        if npu is not None and target is not None:
            name = npu.full_name(target.name)
            own, comparison = split_fields(target_stored.get(name, {}))
            target_fields = SideFields(name, own)
        if bench is not None and golden is not None:
            name = bench.full_name(golden.name)
            own, _ignored = split_fields(golden_stored.get(name, {}))
            golden_fields = SideFields(name, own)
        both = npu is not None and bench is not None
        out.append(
            PairedParam(
                any_param.role.value,
                any_param.key,
                paired_by if both else None,
                target_fields,
                golden_fields,
                comparison,
            )
        )
    return out


def _messages(value: Any) -> list[str]:
    if value == "[]":  # nearly every row
        return []
    if isinstance(value, list):
        return [str(item) for item in value]
    if isinstance(value, str) and value.startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        return [str(item) for item in parsed] if isinstance(parsed, list) else [value]
    return [str(value)] if value else []
