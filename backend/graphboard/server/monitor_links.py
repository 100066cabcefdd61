"""From a monitor comparison's first departure to the ``.vis.db`` files under the data dir that
show its step (the rule is graphboard.monitor.graph_links'). Each file's step and rank lists
and its inputs are read with two small queries on a read-only connection, as
graphboard.demo reads gb_meta: opening every file of the data dir through the viewer's reader
would build its caches for files nobody asked to see."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from graphboard.monitor.graph_links import GraphCandidate, graphs_of_step
from graphboard.server.paths import discover
from graphboard.server.settings import Settings

MAX_FILES = 500  # files looked into per answer; a data dir with more is searched in id order


def _ints(text: Any) -> list[int]:
    try:
        values = json.loads(text) if isinstance(text, str) else []
        return [int(value) for value in values]
    except (ValueError, TypeError):
        return []


def _folder(value: Any) -> Path | None:
    return Path(value) if isinstance(value, str) and value else None


def read_candidate(graph_id: str, path: Path) -> GraphCandidate | None:
    """What the rule needs of one file; None when it is no readable .vis.db."""
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = connection.execute("SELECT step_list, rank_list FROM tb_config LIMIT 1").fetchone()
        if row is None:
            return None
        try:
            meta = connection.execute("SELECT value FROM gb_meta WHERE key = 'inputs'").fetchone()
        except sqlite3.OperationalError:  # msprobe's file: no gb_meta
            meta = None
    except sqlite3.Error:
        return None
    finally:
        connection.close()
    inputs: dict[str, Any] = {}
    if meta is not None:
        try:
            loaded = json.loads(meta[0])
            inputs = loaded if isinstance(loaded, dict) else {}
        except (ValueError, TypeError):
            inputs = {}
    return GraphCandidate(
        graph_id=graph_id,
        steps=_ints(row[0]),
        ranks=_ints(row[1]),
        target=_folder(inputs.get("target")),
        golden=_folder(inputs.get("golden")),
    )


def graph_url(graph_id: str, step: int, rank: int) -> str:
    return "/?" + urlencode({"graph": graph_id, "step": step, "rank": rank})


def departure_graphs(settings: Settings, report: dict[str, Any]) -> list[dict[str, Any]]:
    """The .vis.db files showing the report's first departure (none without one)."""
    first = report.get("first_departure")
    if not isinstance(first, dict):
        return []
    step, rank = int(first["step"]), int(first["rank"])
    candidates = []
    for index, found in enumerate(discover(settings.data_root)):
        if index >= MAX_FILES:
            break
        candidate = read_candidate(found.graph_id, found.path)
        if candidate is not None:
            candidates.append(candidate)
    links = graphs_of_step(
        candidates, step, rank, Path(str(report["target"])), Path(str(report["golden"]))
    )
    return [
        {"graph": link.graph_id, "match": link.match, "url": graph_url(link.graph_id, step, rank)}
        for link in links
    ]
