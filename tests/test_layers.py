"""Dependencies point one way (issue 31 item 5; docs/architecture-layers.md).

Every import in backend/graphboard, at module level, inside a function or under
``TYPE_CHECKING`` (an import hidden in a function is still a dependency), read with ``ast``:

- goes to a package of its own layer or of a layer below (so no module of the core imports the
  server or the CLI);
- closes no cycle, between packages (``graphboard.X``) or between modules.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import graphboard

# Bottom to top; a package may import its own layer's packages and those of the layers below.
# A new package (or top-level module) goes into the layer its imports and its importers allow.
LAYERS: list[tuple[str, frozenset[str]]] = [
    (
        "foundation",
        frozenset(
            {"errors", "refusals", "progress", "stopping", "executor", "accel", "serve_address"}
        ),
    ),
    ("dumps and graphs", frozenset({"dump", "graph", "probe"})),
    ("comparison", frozenset({"compare", "overflow"})),
    ("store", frozenset({"store"})),
    (
        "over the store",
        frozenset(
            {
                "topology",
                "distributed",
                "merge",
                "matching",
                "suggest",
                "table",
                "trends",
                "monitor",
            }
        ),
    ),
    ("pipeline", frozenset({"pipeline"})),
    (
        "commands",
        frozenset({"diagnose", "demo", "verdict", "verdict_cli", "viewer_link", "ci"}),
    ),
    ("server and CLI", frozenset({"server", "cli"})),
]


@dataclass(frozen=True, slots=True)
class Import:
    importer: str  # dotted module name
    imported: str  # the module it names (a package's __init__ when it names a package's attribute)
    where: str  # file:line


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module of the package at ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(root: Path) -> list[Import]:
    """Every import of a module of ``root``'s package by one of its modules."""
    known = modules(root)
    package = root.name
    found = []
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")
                    base = base[: len(base) - node.level + (1 if is_package else 0)]
                    prefix = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    prefix = node.module or ""
                # ``from pkg import sub`` names the submodule; ``from pkg import thing``, pkg
                targets = [
                    f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in known else prefix
                    for alias in node.names
                ]
            else:
                continue
            where = f"{path.relative_to(root.parent)}:{node.lineno}"
            for target in targets:
                if target == package or target.startswith(package + "."):
                    found.append(Import(name, target, where))
    return found


def unit(module: str) -> str:
    """The package (or top-level module) a module belongs to: ``graphboard.X``."""
    return ".".join(module.split(".")[:2])


def layer_problems(
    found: Iterable[Import], layers: list[tuple[str, frozenset[str]]], package: str = "graphboard"
) -> list[str]:
    """An import of a layer above, and every package no layer names."""
    rank = {f"{package}.{name}": i for i, (_, names) in enumerate(layers) for name in names}
    problems = []
    for item in found:
        source, target = unit(item.importer), unit(item.imported)
        if target == package:
            continue
        for name in (source, target):
            if name not in rank:
                problems.append(f"{name} is in no layer of tests/test_layers.py ({item.where})")
        if source in rank and target in rank and rank[target] > rank[source]:
            problems.append(
                f"{item.where}: {item.importer} imports {item.imported}, a layer above "
                f"({layers[rank[source]][0]} -> {layers[rank[target]][0]})"
            )
    return sorted(set(problems))


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def cycle_problems(found: Iterable[Import], by_package: bool) -> list[str]:
    """Each cycle with the imports that close it, between packages or between modules."""
    edges: dict[str, set[str]] = defaultdict(set)
    why: dict[tuple[str, str], set[str]] = defaultdict(set)
    for item in found:
        source, target = item.importer, item.imported
        if by_package:
            source, target = unit(source), unit(target)
            if target == source or target == "graphboard":
                continue
        if source != target:
            edges[source].add(target)
            why[source, target].add(f"{item.where} -> {item.imported}")
    problems = []
    for component in cycles(edges):
        members = set(component)
        closing = [
            f"{line}"
            for source in component
            for target in sorted(edges[source] & members)
            for line in sorted(why[source, target])
        ]
        problems.append(f"cycle {' <-> '.join(component)}: " + "; ".join(closing))
    return problems


def project_imports() -> list[Import]:
    return imports(Path(graphboard.__file__).parent)


def test_every_import_goes_to_its_own_layer_or_below() -> None:
    problems = layer_problems(project_imports(), LAYERS)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("by_package", [True, False], ids=["packages", "modules"])
def test_no_import_cycle(by_package: bool) -> None:
    problems = cycle_problems(project_imports(), by_package)
    assert not problems, "\n".join(problems)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "graphboard" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "graphboard"


def test_the_checks_find_a_core_module_importing_the_server_and_a_cycle(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "__init__.py": "",
            "store/__init__.py": "",
            "store/links.py": "def f():\n    from graphboard.server.app import app\n",
            "store/rows.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from .links import f\n",
            "server/__init__.py": "",
            "server/app.py": "from graphboard.store import rows\napp = 1\n",
            "graph/__init__.py": "from graphboard.graph.model import Node\n",
            "graph/model.py": "from . import walk\nNode = 1\n",
            "graph/walk.py": "from graphboard.graph.model import Node\n",
        },
    )
    found = imports(root)
    layers = [
        ("low", frozenset({"graph", "store"})),
        ("top", frozenset({"server"})),
    ]
    assert layer_problems(found, layers) == [
        "graphboard/store/links.py:2: graphboard.store.links imports graphboard.server.app, "
        "a layer above (low -> top)"
    ]
    assert cycle_problems(found, by_package=True) == [
        "cycle graphboard.server <-> graphboard.store: "
        "graphboard/server/app.py:1 -> graphboard.store.rows; "
        "graphboard/store/links.py:2 -> graphboard.server.app"
    ]
    # a package importing its own submodules is no cycle; modules importing each other are,
    # even through a function-level or a type-checking import
    assert cycle_problems(found, by_package=False) == [
        "cycle graphboard.graph.model <-> graphboard.graph.walk: "
        "graphboard/graph/model.py:1 -> graphboard.graph.walk; "
        "graphboard/graph/walk.py:1 -> graphboard.graph.model",
        "cycle graphboard.server.app <-> graphboard.store.links <-> graphboard.store.rows: "
        "graphboard/server/app.py:1 -> graphboard.store.rows; "
        "graphboard/store/links.py:2 -> graphboard.server.app; "
        "graphboard/store/rows.py:3 -> graphboard.store.links",
    ]
    assert layer_problems(found, [("low", frozenset({"graph", "store"}))]) == [
        "graphboard.server is in no layer of tests/test_layers.py (graphboard/server/app.py:1)",
        "graphboard.server is in no layer of tests/test_layers.py (graphboard/store/links.py:2)",
    ]
