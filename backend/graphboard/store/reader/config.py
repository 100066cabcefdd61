"""A .vis.db's settings (``tb_config``) and the shape of one graph's counts (``gb_graphs``)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from graphboard.compare.result import DataMode
from graphboard.errors import StoreError
from graphboard.graph.model import TARGET_SIDE
from graphboard.store.reader.stored import json_or


@dataclass(slots=True)
class FileConfig:
    """``tb_config``: what the file holds and how to colour it."""

    graph_type: str  # "build" | "compare"
    data_mode: str | None  # msprobe's task: summary | md5 | all | structure; None in a build
    tool_tip: dict[str, Any] | None
    micro_steps: int
    overflow_check: bool
    node_colors: dict[str, dict[str, Any]] | None
    ranks: list[int]
    steps: list[int]

    @property
    def compare(self) -> bool:
        return self.graph_type == "compare"

    @property
    def mode(self) -> DataMode | None:
        try:
            return DataMode(self.data_mode) if self.data_mode else None
        except ValueError:
            return None

    def color_of(self, side: str, precision: float | None, matched: bool | None) -> str | None:
        """The fill tb_graph_ascend gives a node: the unmatched colour, or for a matched target
        node the band holding its precision index; None means plain (white)."""
        if not self.node_colors or not self.compare:
            return None
        if matched is False:
            for color, entry in self.node_colors.items():
                if not isinstance(entry, dict) or not isinstance(entry.get("value"), list):
                    return color
                if not entry["value"]:
                    return color
            return None
        if side != TARGET_SIDE or precision is None:
            return None
        for color, entry in self.node_colors.items():
            bounds = entry.get("value") if isinstance(entry, dict) else None
            if isinstance(bounds, list) and len(bounds) == 2:
                low, high = float(bounds[0]), float(bounds[1])
                if low <= precision < high or precision == high == 1:
                    return color
        return None


@dataclass(slots=True)
class GraphStats:
    """One graph of a file (``gb_graphs``), with manual matches applied."""

    side: str
    step: int
    rank: int
    node_count: int
    micro_steps: int
    matched: int | None
    unmatched: int | None
    pass_count: int | None
    warning_count: int | None
    error_count: int | None
    first_error: str | None


def read_config(conn: sqlite3.Connection, file_name: str) -> FileConfig:
    """The file's ``tb_config`` row."""
    row = conn.execute(
        "SELECT graph_type, task, tool_tip, micro_steps, overflow_check, node_colors, "
        "rank_list, step_list FROM main.tb_config LIMIT 1"
    ).fetchone()
    if row is None:
        raise StoreError(f"{file_name}: tb_config is empty")
    graph_type, task, tool_tip, micro_steps, overflow_check, colors, ranks, steps = row
    return FileConfig(
        graph_type=str(graph_type),
        data_mode=str(task) if task else None,
        tool_tip=json_or(tool_tip, None),
        micro_steps=int(micro_steps or 1),
        overflow_check=bool(overflow_check),
        node_colors=json_or(colors, None),
        ranks=[int(rank) for rank in json_or(ranks, [])],
        steps=[int(step) for step in json_or(steps, [])],
    )
