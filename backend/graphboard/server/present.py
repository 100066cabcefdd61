"""Reader results -> response models: colours, type names and the paired parameter rows."""

from __future__ import annotations

from typing import Any, cast

from graphboard.graph.model import NodeType
from graphboard.server import schemas
from graphboard.store.param_pairs import paired_stored, stored_messages
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


def paired_rows(target: NodeRecord | None, golden: NodeRecord | None) -> list[schemas.ParamRowOut]:
    """Target and golden parameters side by side, paired by name as the builder pairs them
    (``store.param_pairs``), by position only where the names cannot agree."""
    out: list[schemas.ParamRowOut] = []
    for row in paired_stored(target, golden):
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
                messages=stored_messages(row.comparison.get("Err_message")),
            )
        )
    return out
