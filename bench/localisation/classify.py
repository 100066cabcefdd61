"""What a tool answered on one case, and whether that names the injected fault.

Every answer is read the way graphboard's reader reads a file (``graphboard verdict``): the
first node, in execution (node) order, where an error starts, under a rule set; the same
reader opens msprobe's own ``.vis.db``, so msprobe's answer is its own file's first error by
the same rule. An answer is then

- ``right``: the faulty module or a node inside it (for a backward-only fault: its backward
  node or a node inside that);
- ``near``: directly in the faulty module's parent when that parent lies within one layer
  (the whole model, parent of a rotary embedding, narrows nothing), or inside the same module
  one layer away;
- ``wrong``: anything else is the first error;
- ``missed``: no node is an error (a first *warning* is not an answer).

Where nodes are errors but none introduces one, the first error node in node order is the
answer (flagged in the table).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphboard.compare.result import Level
from graphboard.store.reader import GraphKey, listing, open_vis_db
from graphboard.store.reader.rules import ruled_view
from graphboard.verdict_cli import file_verdict

MODULE_PREFIX = "Module."
# A module node's name: Module.<path>.<Class>.<direction>.<call index>
_MODULE = re.compile(
    r"^Module\.(?P<path>.+)\.[^.]+\.(?P<direction>forward|backward|parameters_grad)\.\d+$"
)
_LAYER = re.compile(r"\.(\d+)(?=\.|$)")
TARGET = "NPU"  # msprobe's name for the target side in tb_nodes.data_source

RIGHT, NEAR, WRONG, MISSED = "right", "near", "wrong", "missed"
OUTCOMES = (RIGHT, NEAR, WRONG, MISSED)


@dataclass(frozen=True)
class Answer:
    first_error: str | None  # None: no node is an error
    errors: int  # error nodes (msprobe's counting: API collections through their children)
    introduced: bool = True  # False: errors, none introduced; first_error is the first of them


def answer(path: Path, rules: str, cache_dir: Path) -> Answer:
    """The first introduced error and the error count of ``path`` under ``rules``. Where
    nodes are errors but none introduces one (each has an error among its inputs), the answer
    is the first error node in node order, as a user scanning the red nodes would find it.

    ``cache_dir`` holds what the reader derives from an msprobe file; it must outlive every
    read of that file in this process (the reader's graph views are cached process-wide and
    read their names from there on first use)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    found = file_verdict(path, rules=rules, cache_dir=cache_dir)
    first = found.first_error
    if first is not None and first.level == "error":
        return Answer(first.name, found.counts.error)
    if found.counts.error == 0:
        return Answer(None, 0)
    return Answer(first_error_node(path, rules, cache_dir), found.counts.error, introduced=False)


def first_error_node(path: Path, rules: str, cache_dir: Path) -> str | None:
    """The first target node in node order whose level is error under ``rules``."""
    with open_vis_db(path, cache_dir) as db:
        for stats in sorted(listing.graphs(db, rules), key=lambda graph: (graph.step, graph.rank)):
            if stats.side != TARGET:
                continue
            view = ruled_view(db, GraphKey(TARGET, stats.step, stats.rank), rules)
            errors = np.flatnonzero(view.columns["level"] == int(Level.ERROR))
            if len(errors):
                return str(view.names[int(errors[0])])
    return None


def parents(path: Path) -> dict[str, str]:
    """Each target node's parent (``up_node``), from tb_nodes."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return dict(
            conn.execute(
                "SELECT node_name, up_node FROM tb_nodes WHERE data_source = ?", (TARGET,)
            ).fetchall()
        )


def enclosing_modules(node: str, up: dict[str, str]) -> list[tuple[str, str]]:
    """(module path, direction) of ``node`` itself and each module above it, innermost first;
    ``parameters_grad`` counts as backward."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    current: str | None = node
    while current and current not in seen:
        seen.add(current)
        match = _MODULE.match(current)
        if match:
            direction = match["direction"]
            found.append((match["path"], "forward" if direction == "forward" else "backward"))
        current = up.get(current)
    return found


def _inside(path: str, module: str) -> bool:
    return path == module or path.startswith(module + ".")


def _neighbours(module: str) -> list[str]:
    """The same module one layer before and after (the last layer index in its path)."""
    found = list(_LAYER.finditer(module))
    if not found:
        return []
    last = found[-1]
    index = int(last.group(1))
    return [
        f"{module[: last.start(1)]}{other}{module[last.end(1) :]}"
        for other in (index - 1, index + 1)
        if other >= 0
    ]


def classify(first_error: str | None, up: dict[str, str], module: str, backward: bool) -> str:
    """right / near / wrong / missed for a fault injected into ``module`` (backward only when
    ``backward``), the answer ``first_error`` read in a file whose parents are ``up``."""
    if first_error is None:
        return MISSED
    direction = "backward" if backward else "forward"
    enclosing = [path for path, way in enclosing_modules(first_error, up) if way == direction]
    if any(_inside(path, module) for path in enclosing):
        return RIGHT
    parent = module.rsplit(".", 1)[0] if "." in module else ""
    innermost = enclosing[0] if enclosing else ""
    if _LAYER.search(parent) and innermost == parent:  # a parent that spans layers narrows nothing
        return NEAR
    if any(_inside(path, other) for path in enclosing for other in _neighbours(module)):
        return NEAR
    return WRONG


def precision_mismatches(ours: Path, theirs: Path) -> list[tuple[str, object, object]]:
    """(node, ours, theirs) wherever the two files' target precision_index differ, a node
    present in one file only included (its missing side None)."""

    def read(path: Path) -> dict[str, object]:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return dict(
                conn.execute(
                    "SELECT node_name, precision_index FROM tb_nodes WHERE data_source = ?",
                    (TARGET,),
                ).fetchall()
            )

    mine, other = read(ours), read(theirs)
    return [
        (name, mine.get(name), other.get(name))
        for name in sorted(mine.keys() | other.keys())
        if mine.get(name) != other.get(name)
    ]
