"""A .vis.db's settings: ``tb_config``, graphboard's build metadata and its list of graphs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphboard.compare.result import DataMode
from graphboard.errors import StoreError
from graphboard.graph.model import TARGET_SIDE
from graphboard.store.graph_views import GraphKey
from graphboard.store.reader.opening import HeldConnection, OpenFile, Source
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


class FileSettings(OpenFile):
    """What the file holds: its config (read once), build metadata and graphs."""

    def __init__(self, path: Path, conn: HeldConnection, cache_dir: Path) -> None:
        super().__init__(path, conn, cache_dir)
        self._config: FileConfig | None = None

    def config(self) -> FileConfig:
        if self._config is None:
            row = self.conn.execute(
                "SELECT graph_type, task, tool_tip, micro_steps, overflow_check, node_colors, "
                "rank_list, step_list FROM main.tb_config LIMIT 1"
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path.name}: tb_config is empty")
            graph_type, task, tool_tip, micro_steps, overflow_check, colors, ranks, steps = row
            self._config = FileConfig(
                graph_type=str(graph_type),
                data_mode=str(task) if task else None,
                tool_tip=json_or(tool_tip, None),
                micro_steps=int(micro_steps or 1),
                overflow_check=bool(overflow_check),
                node_colors=json_or(colors, None),
                ranks=[int(rank) for rank in json_or(ranks, [])],
                steps=[int(step) for step in json_or(steps, [])],
            )
        return self._config

    def meta(self) -> dict[str, Any]:
        """graphboard's build metadata (``gb_meta``); empty for msprobe's files."""
        if self.source is not Source.GRAPHBOARD:
            return {}
        return {
            str(key): json_or(value, value)
            for key, value in self.conn.execute("SELECT key, value FROM main.gb_meta")
        }

    def stored_graphs(self) -> list[GraphStats]:
        """Every graph of the file as the build counted it, in step, rank, side (NPU first)
        order; :meth:`VisDb.graphs` recounts those a user's matches changed."""
        return [
            GraphStats(str(side), int(step), int(rank), int(count), int(micro or 1), *rest)
            for side, step, rank, count, micro, *rest in self._gb_conn().execute(
                "SELECT data_source, step, rank, node_count, micro_steps, matched, unmatched, "
                "pass_count, warning_count, error_count, first_error FROM gb_graphs "
                "ORDER BY step, rank, data_source DESC"
            )
        ]

    def has_graph(self, key: GraphKey) -> bool:
        return (
            self._gb_conn()
            .execute(
                "SELECT 1 FROM gb_graphs WHERE data_source = ? AND step = ? AND rank = ?",
                (key.side, key.step, key.rank),
            )
            .fetchone()
            is not None
        )
