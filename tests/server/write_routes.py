"""The write routes of a graph file, as the write-access and damaged-file tests call them."""

from __future__ import annotations

from typing import Any

GRAPH = "ours/layer-mapping"
STEP_RANK = {"step": 0, "rank": 0}
PAIR = {
    "target": "Module.classifier.0.Linear.forward.0",
    "golden": "Module.head.0.Linear.forward.0",
}
# (method, path under the graph, query, JSON body): every write route of a graph file
WRITES: list[tuple[str, str, dict[str, Any], Any]] = [
    ("POST", "matches", {}, {**STEP_RANK, **PAIR}),
    ("DELETE", "matches", {**STEP_RANK, **PAIR}, None),
    ("POST", "suggestions/accept", {}, {**STEP_RANK, **PAIR}),
    ("POST", "matches/undo", STEP_RANK, None),
    ("POST", "matches/vis-config", STEP_RANK, {PAIR["target"]: PAIR["golden"]}),
    ("POST", "suggestions/accept-all", {}, STEP_RANK),
    ("POST", "suggestions/reject", {}, {**STEP_RANK, **PAIR}),
]
