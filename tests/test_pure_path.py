"""The pure path is the reference: every shared fixture case and integration case, built by the
real ``graph_build`` with ``GRAPHBOARD_PURE=1`` and without, gives the same file, table by table,
row by row, column by column (vis_db_support.assert_same_vis_db).

The two builds of a case run side by side, as two processes.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from build_runs import build_side_by_side, environment
from fixture_cases import fixture_path
from graphboard.accel import MODULES, PURE_ENV
from test_cli import COMMAND
from vis_db_support import assert_same_vis_db

RESNET = "msprobe-resnet50-gpu"
LABELS = ("pure", "compiled")

Argument = str | tuple[str, ...]  # a tuple: a path under the shared fixtures


def _compare(case: str, *flags: Argument) -> list[Argument]:
    return ["-tp", (case, "target"), "-gp", (case, "golden"), *flags]


# graph_build's arguments by case: every mode (statistics, md5, tensor), -oc, -fm, -lm with and
# without a mapping, builds and compares, several ranks and steps; what tests/conftest.py and
# tests/integration/ build.
FIXTURE_CASES: dict[str, list[Argument]] = {
    "convnet-stats": _compare("convnet-stats"),
    "convnet-stats-oc": _compare("convnet-stats", "-oc"),
    "convnet-stats-fm": _compare("convnet-stats", "-fm"),
    "convnet-md5": _compare("convnet-md5"),
    "convnet-tensor": _compare("convnet-tensor"),
    "convnet-overflow-build-oc": ["-tp", ("convnet-overflow", "target"), "-oc"],
    "convnet-ddp2": _compare("convnet-ddp2"),
    "convnet-ddp2-build": ["-tp", ("convnet-ddp2", "target")],
    "layer-mapping": _compare("layer-mapping"),
    "layer-mapping-lm-yaml": _compare("layer-mapping", "-lm", ("layer-mapping", "mapping.yaml")),
    "layer-mapping-lm": _compare("layer-mapping", "-lm"),
    "resnet-build-two-steps": ["-tp", (RESNET,)],
    "resnet-step1-vs-step0-oc": ["-tp", (RESNET, "step1"), "-gp", (RESNET, "step0"), "-oc"],
}

# test_probe_compare_msprobe's bf16 target against an fp32 golden, dumped by graphboard's probe
PROBE_TASKS = ("statistics", "tensor")


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:  # its package is not installed
        return False


def _compiled_parts_built() -> bool:
    return any(_installed(module) for module in MODULES.values())


def build_both(args: list[str], out: Path) -> tuple[Path, Path]:
    """(pure, compiled) .vis.db of one graph_build command line, run side by side."""
    paths = build_side_by_side(
        {label: (COMMAND, environment(pure=label == "pure")) for label in LABELS}, args, out
    )
    return paths["pure"], paths["compiled"]


def _arguments(case: str) -> list[str]:
    return [
        str(fixture_path(*part)) if isinstance(part, tuple) else part
        for part in FIXTURE_CASES[case]
    ]


@pytest.fixture(scope="module", autouse=True)
def _compiled_path_exists() -> None:
    if not _compiled_parts_built():
        pytest.skip("no compiled part is built here: the compiled path is the pure path")


def test_every_shared_fixture_is_a_case() -> None:
    used = {part[0] for args in FIXTURE_CASES.values() for part in args if isinstance(part, tuple)}
    assert used == {path.name for path in fixture_path().iterdir() if path.is_dir()}


@pytest.mark.parametrize("case", list(FIXTURE_CASES))
def test_a_fixture_builds_the_same_file_pure_and_compiled(case: str, tmp_path: Path) -> None:
    pure, compiled = build_both(_arguments(case), tmp_path)
    assert_same_vis_db(pure, compiled, LABELS)


@pytest.fixture(scope="module")
def probe_dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """(bf16 target, fp32 golden) per probe task."""
    import torch

    from integration.test_probe_compare_msprobe import _dump as probe_dump

    dumps = {}
    for task in PROBE_TASKS:
        root = tmp_path_factory.mktemp(f"probe-{task}")
        dumps[task] = (
            probe_dump(root / "target", torch.bfloat16, task),
            probe_dump(root / "golden", torch.float32, task),
        )
    return dumps


@pytest.mark.parametrize("task", PROBE_TASKS)
def test_a_probe_dump_compares_the_same_pure_and_compiled(
    task: str, probe_dumps: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    target, golden = probe_dumps[task]
    pure, compiled = build_both(["-tp", str(target), "-gp", str(golden)], tmp_path)
    assert_same_vis_db(pure, compiled, LABELS)


# Builds every stage in this process under GRAPHBOARD_PURE=1 (one worker: no pool), then lists
# the compiled modules that were imported.
_IN_PROCESS = """
import json, sys
from graphboard.cli import graph_build_main
out, cases = sys.argv[1:]
for index, case in enumerate(json.loads(cases)):
    code = graph_build_main([*case, "-o", f"{out}/{index}", "-q", "--workers", "1"])
    assert code == 0, case
print(json.dumps(sorted(name for name in sys.modules if name.startswith(("graphboard.accel._", "graphboard_btree")))))
"""


def test_the_pure_path_loads_no_compiled_module(tmp_path: Path) -> None:
    cases = [
        _arguments(case)
        for case in ("convnet-stats-oc", "convnet-ddp2")  # one rank with -oc, two ranks
    ]
    run = subprocess.run(
        [sys.executable, "-c", _IN_PROCESS, str(tmp_path), json.dumps(cases)],
        env=environment(pure=True),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []


# graph_build with the compiled tb_nodes writer (packages/graphboard-btree) not installed, or
# installed but built for another tb_nodes layout (refused by accel, with a line on stderr).
_WITHOUT_BTREE = """
import sys
if sys.argv.pop(1) == "absent":
    sys.modules["graphboard_btree"] = None  # importing it fails, as when it is not installed
else:
    import graphboard_btree._btree
    graphboard_btree._btree.LAYOUT_VERSION = -1
from graphboard.cli import graph_build_command
graph_build_command()
"""


def _schema_order(path: Path) -> list[str]:
    """sqlite_schema's names in rowid order: the compiled writer's file lists tb_nodes' indexes
    right after it, SQLite's lists them after the other tables (docs/differences.md)."""
    with sqlite3.connect(path) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_schema ORDER BY rowid")]
    conn.close()
    return names


@pytest.mark.parametrize("why", ["absent", "another layout"])
def test_without_the_btree_package_a_build_is_the_one_graphboard_pure_btree_makes(
    why: str, tmp_path: Path
) -> None:
    installed = _installed(MODULES["btree"])
    if why != "absent" and not installed:
        pytest.skip("graphboard-btree is not installed here")
    # one rank (its part is the file) in one process (--workers 1: the module is hidden in
    # this one only)
    args = [*_arguments("convnet-stats"), "--workers", "1"]
    runs = {
        "without": ([sys.executable, "-c", _WITHOUT_BTREE, why], environment(pure=False)),
        "pure-btree": (COMMAND, {**environment(pure=False), PURE_ENV: "btree"}),
    }
    if installed:
        runs["default"] = (COMMAND, environment(pure=False))
    paths = build_side_by_side(runs, args, tmp_path)
    assert_same_vis_db(paths["without"], paths["pure-btree"], ("without", "pure-btree"))
    # and written the same way: by SQLite, not by the compiled writer the default uses
    assert _schema_order(paths["without"]) == _schema_order(paths["pure-btree"])
    if installed:
        assert _schema_order(paths["default"]) != _schema_order(paths["pure-btree"])
