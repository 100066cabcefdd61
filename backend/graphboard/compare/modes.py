"""Which data mode a pair of dumps is in, and whether the two sides agree."""

from __future__ import annotations

from graphboard.compare.result import DataMode
from graphboard.errors import CompareError
from graphboard.graph.model import Graph

_TASKS = {"tensor": DataMode.TENSOR, "structure": DataMode.STRUCTURE}


def data_mode(graph: Graph) -> DataMode:
    task = graph.task
    if task == "statistics":
        return DataMode.MD5 if graph.has_md5 else DataMode.SUMMARY
    mode = _TASKS.get(task)
    if mode is None:
        raise CompareError(
            f"{graph.dump_dir}: dump task {task!r} cannot be compared; expected statistics, tensor or structure"
        )
    return mode


def _describe(mode: DataMode) -> str:
    return {
        DataMode.SUMMARY: "statistics",
        DataMode.MD5: "statistics with md5",
        DataMode.TENSOR: "tensor",
        DataMode.STRUCTURE: "structure",
    }[mode]


def common_mode(target: Graph, golden: Graph, layer_mapping: bool = False) -> DataMode:
    target_mode, golden_mode = data_mode(target), data_mode(golden)
    if target_mode is not golden_mode:
        raise CompareError(
            f"the target dump ({target.dump_dir}) holds {_describe(target_mode)} data but the golden dump "
            f"({golden.dump_dir}) holds {_describe(golden_mode)} data; dump both with the same task and summary_mode"
        )
    if target.framework != golden.framework and not layer_mapping:
        raise CompareError(
            f"the target is a {target.framework} dump and the golden a {golden.framework} dump; "
            "cross-framework compare needs -lm (layer mapping)"
        )
    return target_mode
