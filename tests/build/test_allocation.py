"""graphboard.allocation: reading pauses the cyclic collector wherever it runs, and a process
that ends with its build keeps the task's graphs for the exit (frozen, out of the collector's
sight) instead of freeing them."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_cases import fixture_path
from graphboard.dump.layout import RankDir
from graphboard.graph import builder


def test_reading_a_dump_pauses_the_collector_and_restores_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker reading a folder aside runs read_records alone, outside any task: the pause
    must be its own."""
    seen: list[bool] = []

    class Watched(builder.DumpRecords):
        def __init__(self, path: Path) -> None:
            seen.append(gc.isenabled())
            super().__init__(path)

    monkeypatch.setattr(builder, "DumpRecords", Watched)
    folder = next((fixture_path("convnet-stats") / "golden").rglob("dump.json")).parent
    was_enabled = gc.isenabled()
    gc.enable()
    try:
        records = builder.read_records(RankDir(0, 0, folder))
        assert gc.isenabled()
    finally:
        (gc.enable if was_enabled else gc.disable)()
    assert seen == [False]
    assert records.params


_TASK_IN_A_FRESH_PROCESS = """
import gc, json, sys
from pathlib import Path
from graphboard import allocation
from graphboard.build import BuildOptions, plan_build, run_task
from graphboard.graph.model import Graph
if sys.argv[1] == "ends":
    allocation.process_ends_with_work()
root, out = Path(sys.argv[2]), Path(sys.argv[3])
options = BuildOptions(target=root / "target", golden=root / "golden", output_dir=out)
run_task(plan_build(options).tasks[0], options, out / "part0.db")
gc.collect()
kept = [graph for work in allocation._kept_for_exit for graph in work]
alive = kept + [o for o in gc.get_objects() if isinstance(o, Graph)]  # frozen ones not listed
print(json.dumps({
    "kept": len(allocation._kept_for_exit),
    "alive": len(alive),
    "frozen": gc.get_freeze_count() > 0,
    "whole": all(node.parent is not None for g in alive for node in g.nodes.values()
                 if node is not g.root),
}))
"""


@pytest.mark.parametrize("declared", [True, False], ids=["ends with its work", "goes on"])
def test_a_process_ending_with_its_build_keeps_the_graphs_others_free_them(
    tmp_path: Path, declared: bool
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            _TASK_IN_A_FRESH_PROCESS,
            "ends" if declared else "goes on",
            str(fixture_path("convnet-stats")),
            str(out),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    state = json.loads(shown.stdout.strip().splitlines()[-1])
    if declared:  # the target and golden graphs, kept whole for the exit
        assert state == {"kept": 1, "alive": 2, "frozen": True, "whole": True}
    else:
        assert state == {"kept": 0, "alive": 0, "frozen": False, "whole": True}
