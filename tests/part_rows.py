"""tb_nodes rows for tests of the part writer: valid, small, one field changed at will."""

from __future__ import annotations

from typing import Any

from graphboard.store.schema import TB_NODES_COLUMNS


def node_row(order: int, **changes: Any) -> tuple[Any, ...]:
    """The row of node ``order`` of graph NPU_0_0, in TB_NODES_COLUMNS order."""
    name = changes.pop("node_name", f"Module.layer.{order}.forward")
    values: dict[str, Any] = {
        "id": f"NPU_0_0_{name}",
        "graph_id": "NPU_0_0",
        "node_order": order,
        "node_name": name,
        "node_type": "0",
        "up_node": "DefaultModel",
        "sub_nodes": "",
        "precision_index": None,
        "overflow_level": None,
        "micro_step_id": 0,
        "matched_node_link": "[]",
        "stack_id": "NPU_0_0_0",
        "parallel_merge_info": "",
        "matched_distributed": "{}",
        "modified": 0,
        "input_data": "{}",
        "output_data": "{}",
        "data_source": "NPU",
        "dump_data_dir": None,
        "step": 0,
        "rank": 0,
        "is_distributed": 0,
    }
    unknown = set(changes) - set(values)
    if unknown:
        raise KeyError(f"not tb_nodes columns: {sorted(unknown)}")
    values.update(changes)
    return tuple(values[column] for column in TB_NODES_COLUMNS)
