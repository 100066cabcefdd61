"""Real msprobe dumps against what msprobe 26.2's own graph_visualize made of them: the same
hierarchy (node names, parents, child order, node types) in every graph, apart from the
parameter gradients graphboard keeps where msprobe drops them."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dumpmaker import BuildFn, fixture_path, reference_db
from graphboard.dump.layout import discover
from graphboard.pipeline import BuildOptions, run_build
from graphboard.store.reader import GraphKey, Source, open_vis_db, tree

REPO = Path(__file__).resolve().parents[2]
RESNET = "msprobe-resnet50-gpu"
GraphId = tuple[str, int, int]  # (data_source, step, rank)


@dataclass(frozen=True)
class Node:
    up_node: str
    sub_nodes: tuple[str, ...]
    node_type: str
    micro_step_id: int
    stack: tuple[str, ...]


def _graphs(path: Path) -> dict[GraphId, dict[str, Node]]:
    with sqlite3.connect(path) as conn:
        stacks = {
            key: tuple(json.loads(text)) for key, text in conn.execute("SELECT * FROM tb_stack")
        }
        rows = conn.execute(
            "SELECT data_source, step, rank, node_name, up_node, sub_nodes, node_type,"
            " micro_step_id, stack_id FROM tb_nodes ORDER BY node_order"
        ).fetchall()
    graphs: dict[GraphId, dict[str, Node]] = {}
    for side, step, rank, name, up, sub, node_type, micro, stack_id in rows:
        children = tuple(json.loads(sub)) if sub else ()
        graphs.setdefault((side, step, rank), {})[name] = Node(
            up, children, str(node_type), micro, stacks.get(stack_id, ())
        )
    return graphs


def _rescued(path: Path) -> dict[GraphId, set[str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT data_source, step, rank, rescued_grads FROM gb_graphs")
        return {(side, step, rank): set(json.loads(names)) for side, step, rank, names in rows}


def _without(nodes: dict[str, Node], dropped: set[str]) -> dict[str, Node]:
    return {
        name: Node(
            node.up_node,
            tuple(child for child in node.sub_nodes if child not in dropped),
            node.node_type,
            node.micro_step_id,
            node.stack,
        )
        for name, node in nodes.items()
        if name not in dropped
    }


def _hierarchy(nodes: dict[str, Node]) -> dict[str, tuple[str, tuple[str, ...], str]]:
    return {name: (node.up_node, node.sub_nodes, node.node_type) for name, node in nodes.items()}


# --- the cases --------------------------------------------------------------------------------


def _resnet_compare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = fixture_path(RESNET)
    options = BuildOptions(
        target=root / "step1",
        golden=root / "step0",
        output_dir=tmp_path_factory.mktemp("resnet-compare"),
        overflow_check=True,
        workers=1,
    )
    return run_build(options).path


Builder = Callable[[BuildFn, pytest.TempPathFactory], Path]
CASES: dict[tuple[str, str], Builder] = {
    ("convnet-stats", "reference"): lambda built, _: built("convnet-stats"),
    ("convnet-stats", "reference-oc"): lambda built, _: built("convnet-stats", overflow_check=True),
    ("convnet-md5", "reference"): lambda built, _: built("convnet-md5"),
    ("convnet-tensor", "reference"): lambda built, _: built("convnet-tensor"),
    ("convnet-overflow", "reference"): lambda built, _: built(
        "convnet-overflow", compare=False, overflow_check=True
    ),
    ("convnet-ddp2", "reference"): lambda built, _: built("convnet-ddp2"),
    ("layer-mapping", "reference"): lambda built, _: built("layer-mapping"),
    ("layer-mapping", "reference-lm"): lambda built, _: built(
        "layer-mapping", layer_mapping=fixture_path("layer-mapping", "mapping.yaml")
    ),
    (RESNET, "reference-build"): lambda built, _: built(RESNET, compare=False),
    (RESNET, "reference-compare-step1-vs-step0"): lambda _, factory: _resnet_compare(factory),
}


@pytest.fixture(scope="module")
def pairs(
    built: BuildFn, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[tuple[str, str]], tuple[Path, Path]]:
    """(ours, msprobe's) for a case, each of ours built once per session."""
    cache: dict[tuple[str, str], tuple[Path, Path]] = {}

    def get(case: tuple[str, str]) -> tuple[Path, Path]:
        if case not in cache:
            cache[case] = (CASES[case](built, tmp_path_factory), reference_db(*case))
        return cache[case]

    return get


def _aligned(ours: Path, theirs: Path) -> list[tuple[GraphId, GraphId]]:
    """(our graph, msprobe's graph) pairs. msprobe numbers a single step folder given
    directly as step 0; graphboard takes the number from the folder name (step1)."""
    mine, reference = sorted(_graphs(ours)), sorted(_graphs(theirs))
    if mine == reference:
        return list(zip(mine, reference, strict=True))
    assert len({step for _, step, _ in mine}) == len({step for _, step, _ in reference}) == 1
    by_side_rank = {(side, rank): (side, step, rank) for side, step, rank in reference}
    assert sorted(by_side_rank) == sorted((side, rank) for side, _, rank in mine)
    return [(graph, by_side_rank[(graph[0], graph[2])]) for graph in mine]


def test_every_fixture_with_a_reference_is_a_case() -> None:
    root = fixture_path()
    found = {
        (path.parent.parent.name, path.parent.name) for path in root.glob("*/reference*/*.vis.db")
    }
    assert found == set(CASES)


@pytest.mark.parametrize("case", list(CASES), ids=["/".join(case) for case in CASES])
def test_hierarchy_matches_msprobes_apart_from_rescued_gradients(
    case: tuple[str, str], pairs: Callable[[tuple[str, str]], tuple[Path, Path]]
) -> None:
    ours, theirs = pairs(case)
    our_graphs, their_graphs, rescued = _graphs(ours), _graphs(theirs), _rescued(ours)
    for mine, reference in _aligned(ours, theirs):
        nodes, expected = our_graphs[mine], their_graphs[reference]
        # the only extra nodes are the gradients gb_graphs lists as rescued
        assert set(nodes) - set(expected) == rescued[mine], mine
        assert not rescued[mine] & set(expected)
        kept = _without(nodes, rescued[mine])
        assert _hierarchy(kept) == _hierarchy(expected), mine
        # same relative node_order (post-order), same micro steps
        assert list(kept) == list(expected), mine
        assert {name: node.micro_step_id for name, node in kept.items()} == {
            name: node.micro_step_id for name, node in expected.items()
        }


@pytest.mark.parametrize("case", list(CASES), ids=["/".join(case) for case in CASES])
def test_stacks_match_msprobes_except_later_backward_calls(
    case: tuple[str, str], pairs: Callable[[tuple[str, str]], tuple[Path, Path]]
) -> None:
    """msprobe gives every module backward call the stack of forward call 0; graphboard gives
    backward call N the stack of forward call N (where that module was called from)."""
    ours, theirs = pairs(case)
    our_graphs, their_graphs = _graphs(ours), _graphs(theirs)
    later_backward = re.compile(r"\.backward\.([1-9]\d*)$")
    for mine, reference in _aligned(ours, theirs):
        nodes = our_graphs[mine]
        for name, node in their_graphs[reference].items():
            call = later_backward.search(name)
            if call is None:
                assert nodes[name].stack == node.stack, (mine, name)
            else:
                twin = f"{name[: call.start()]}.forward.{call.group(1)}"
                assert nodes[name].stack == nodes[twin].stack, (mine, name)


def test_rescued_gradients_are_the_batchnorms_whose_backward_msprobe_lost(
    pairs: Callable[[tuple[str, str]], tuple[Path, Path]],
) -> None:
    ours, _ = pairs(("convnet-stats", "reference"))
    assert _rescued(ours) == {
        ("NPU", 0, 0): {"Module.stem.1.BatchNorm2d.parameters_grad.0"},
        ("Bench", 0, 0): {"Module.stem.1.BatchNorm2d.parameters_grad.0"},
    }
    ours, _ = pairs((RESNET, "reference-build"))
    for names in _rescued(ours).values():
        assert len(names) == 49
        assert all(re.search(r"\.bn\d?\.BatchNorm2d\.parameters_grad\.\d$", name) for name in names)


# --- the public ResNet-50 dump through graph_build ----------------------------------------------


def test_graph_build_on_the_resnet_dump_root_builds_both_steps(tmp_path: Path) -> None:
    root = fixture_path(RESNET)
    script = Path(sys.executable).with_name("graph_build")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "graphboard.cli"]
    run = subprocess.run(
        [*command, "-tp", os.path.relpath(root, REPO), "-o", str(tmp_path / "out"), "-q"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    path = Path(run.stdout.strip())
    assert path.parent == tmp_path / "out" and path.is_file()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT step_list, rank_list FROM tb_config").fetchone() == (
            "[0,1]",
            "[0]",
        )
        counts = conn.execute(
            "SELECT step, rank, COUNT(*) FROM tb_nodes GROUP BY step, rank ORDER BY step"
        ).fetchall()
    assert counts == [(0, 0, 929 + 49), (1, 0, 767 + 49)]  # msprobe's nodes + rescued grads


@pytest.mark.parametrize(
    ("parts", "step"), [(("step0",), 0), (("step1",), 1), (("step1", "proc2016"), 1)]
)
def test_each_resnet_step_builds_on_its_own_with_its_own_number(
    tmp_path: Path, parts: tuple[str, ...], step: int
) -> None:
    target = fixture_path(RESNET, *parts)
    result = run_build(BuildOptions(target=target, output_dir=tmp_path, workers=1))
    assert (result.steps, result.ranks) == ([step], [0])
    with sqlite3.connect(result.path) as conn:
        graphs = conn.execute("SELECT DISTINCT graph_id FROM tb_nodes").fetchall()
    assert graphs == [(f"NPU_{step}_0",)]
    assert discover(target).ranks[0].path.name == "proc2016"


# --- one reader for both -------------------------------------------------------------------------


def _root_children(path: Path, cache: Path, key: GraphKey) -> tuple[Source, str, list[Any]]:
    with open_vis_db(path, cache) as db:
        root = tree.root(db, key)
        assert root is not None
        page = tree.children(db, key, root.name)
        assert page.next_cursor is None
        return db.source, root.name, [(item.name, item.node_type) for item in page.items]


def test_the_reader_opens_msprobes_file_and_ours_the_same_way(
    pairs: Callable[[tuple[str, str]], tuple[Path, Path]], tmp_path: Path
) -> None:
    ours, theirs = pairs(("convnet-stats", "reference"))
    rescued = _rescued(ours)
    for side in ("NPU", "Bench"):
        key = GraphKey(side, 0, 0)
        our_source, our_root, our_children = _root_children(ours, tmp_path / "cache", key)
        their_source, their_root, their_children = _root_children(theirs, tmp_path / "cache", key)
        assert (our_source, their_source) == (Source.GRAPHBOARD, Source.MSPROBE)
        assert our_root == their_root == "DefaultModel"
        assert our_children == their_children
        assert not {name for name, _ in our_children} & rescued[(side, 0, 0)]
        assert [name for name, _ in their_children] == list(
            _graphs(theirs)[(side, 0, 0)]["DefaultModel"].sub_nodes
        )
    # msprobe's file is read, never written: the reader's derived columns live in the cache
    assert reference_db("convnet-stats", "reference") == theirs
    assert not list(theirs.parent.glob("*-wal")) and not list(theirs.parent.glob("*-shm"))
