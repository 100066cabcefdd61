"""``graph_build --file_type json`` against msprobe's own JSON export of the same real TP2, PP2
and TP2xPP2 dumps, file by file and key by key; every difference is one that
docs/differences.md lists. And the exported folder is a dump: read back, it is the merged
graph (structure and statistics)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from parallel_dumps import LAYOUTS, DumpFn

from graphboard.dump.layout import RankDir, discover
from graphboard.dump.records import STAT_FIELDS
from graphboard.graph.builder import build_graph
from graphboard.graph.model import Graph
from graphboard.merge.flags import parallel_options
from graphboard.merge.plan import plan_merge
from graphboard.merge.stage import merged_sides
from msprobe_runner import msprobe_binary
from test_cli import graph_build

LAYOUT_NAMES = ("tp2", "pp2", "tp2pp2")
Exports = dict[str, tuple[Path, Path]]  # layout -> (ours, msprobe's) step0/rank0 folders


def _msprobe_export(root: Path, flags: list[str], out: Path) -> Path:
    command = [msprobe_binary(), "graph_visualize", "-tp", str(root), *flags]
    command += ["--file_type", "json", "-o", str(out)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert sorted(path.name for path in out.iterdir()) == ["step0"]  # the json, no .vis.db
    return out / "step0" / "rank0"


@pytest.fixture(scope="module")
def exports(parallel_dump: DumpFn, tmp_path_factory: pytest.TempPathFactory) -> Exports:
    made: Exports = {}
    for name in LAYOUT_NAMES:
        dump = parallel_dump(name, "mix")
        flags = dump.layout.merge_flags()
        ours = tmp_path_factory.mktemp(f"json-{name}")
        run = graph_build("-tp", dump.root, "-o", ours, *flags, "--file_type", "json", "-q")
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines() == [str(ours / "step0" / "rank0")]
        assert sorted(path.name for path in ours.iterdir()) == ["step0"]  # no temp folder left
        theirs = _msprobe_export(dump.root, flags, tmp_path_factory.mktemp(f"msprobe-{name}"))
        made[name] = (ours / "step0" / "rank0", theirs)
    return made


def _load(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text())


@pytest.mark.parametrize("name", LAYOUT_NAMES)
@pytest.mark.parametrize("file", ["construct.json", "stack.json"])
def test_construct_and_stack_are_msprobes(exports: Exports, name: str, file: str) -> None:
    ours, theirs = (_load(folder, file) for folder in exports[name])
    assert list(ours.items()) == list(theirs.items())  # the same pairs in the same order


def _stat_explained(ours: Any, theirs: Any, raw: Any) -> bool:
    """The two documented differences of a statistic: msprobe wrote the main rank's own value
    where the merged one belongs, or wrote a boolean as text."""
    return theirs == raw or (isinstance(ours, bool) and theirs == str(ours))


def _differences(path: str, ours: Any, theirs: Any, raw: Any, found: list[str]) -> None:
    """Every difference between two records no documented rule explains, as a path."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        raw = raw if isinstance(raw, dict) else {}
        for key in ours.keys() | theirs.keys():
            if key in ours and key in theirs:
                _differences(f"{path}.{key}", ours[key], theirs[key], raw.get(key), found)
            elif key in STAT_FIELDS and key in ours and ours[key] == ours.get("value"):
                continue  # a scalar nested in a rebuilt list argument: msprobe moved it
            else:
                found.append(f"{path}.{key}: only in {'ours' if key in ours else 'msprobe'}")
    elif isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        raw = raw if isinstance(raw, list) and len(raw) == len(ours) else [None] * len(ours)
        for index, (mine, other, dumped) in enumerate(zip(ours, theirs, raw, strict=True)):
            _differences(f"{path}.{index}", mine, other, dumped, found)
    elif ours != theirs:
        field = path.rsplit(".", 1)[-1]
        if not (field in STAT_FIELDS and _stat_explained(ours, theirs, raw)):
            found.append(f"{path}: ours {ours!r}, msprobe {theirs!r}")


def _rebuilt_differences(name: str, ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """A renamed or later-stage node msprobe rebuilds from its parameters: it drops a
    module's ``parameters``, gives a scalar, a process group or a peer its internal dtype and
    shape, and files a scalar
    nested in a list argument under input_kwargs; ours keeps the record's own form."""
    ours = {key: value for key, value in ours.items() if key != "parameters"}
    theirs = dict(theirs)
    kwargs = theirs.pop("input_kwargs", {})
    moved = {key: leaf for key, leaf in kwargs.items() if "." in key}
    if len(moved) < len(kwargs):
        theirs["input_kwargs"] = {k: v for k, v in kwargs.items() if k not in moved}
    found: list[str] = []
    for key, leaf in moved.items():  # "1.0" -> input_args[1][0]
        index, _, inner = key.partition(".")
        if ours["input_args"][int(index)][int(inner)]["value"] != leaf["value"]:
            found.append(f"{name}.input_kwargs.{key}")
    moved_out = {int(key.partition(".")[0]) for key in moved}  # msprobe's list closes up
    if moved_out:
        ours["input_args"] = [
            item for position, item in enumerate(ours["input_args"]) if position not in moved_out
        ]
    leaves = [*theirs.get("input_args", []), *theirs.get("output", [])]
    for leaf in [*leaves, *theirs.get("input_kwargs", {}).values()]:
        if isinstance(leaf, dict) and leaf.get("type") != "torch.Tensor":
            leaf.pop("dtype", None), leaf.pop("shape", None)
    _differences(name, ours, theirs, {}, found)
    return found


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_dump_json_is_msprobes_but_for_the_listed_differences(
    exports: Exports, parallel_dump: DumpFn, name: str
) -> None:
    (ours, theirs), main = (
        (_load(folder, "dump.json") for folder in exports[name]),
        parallel_dump(name, "mix").root / "step0" / "rank0" / "dump.json",
    )
    raw = json.loads(main.read_text())["data"]
    assert {k: v for k, v in ours.items() if k != "data"} == {
        k: v for k, v in theirs.items() if k != "data"
    }
    assert ours["is_merged"] is True
    mine, other = ours["data"], theirs["data"]
    # msprobe drops the later stages' parameters_grad records; every other record is in both
    only_ours = [record for record in mine if record not in other]
    assert all(".parameters_grad." in record and record not in raw for record in only_ours)
    assert (len(only_ours) > 0) == (LAYOUTS[name].pp > 1)
    assert [record for record in mine if record in other] == list(other)
    found: list[str] = []
    for record, theirs_record in other.items():
        if record in raw:
            _differences(record, mine[record], theirs_record, raw[record], found)
        else:
            found += _rebuilt_differences(record, mine[record], theirs_record)
    assert found == [], "\n".join(found)
    informed = [record for record in other if "parallel_merge_info" in mine[record]]
    assert informed == [record for record in other if "parallel_merge_info" in other[record]]
    assert (len(informed) > 0) == (LAYOUTS[name].tp > 1)


def _merged_graph(name: str, parallel_dump: DumpFn) -> Graph:
    layout = LAYOUTS[name]
    options = parallel_options(
        rank_size=[layout.ranks], tp=[layout.tp], pp=[layout.pp], compare=False
    )
    assert options is not None
    plan = plan_merge(options, discover(parallel_dump(name, "mix").root), None, [])
    return merged_sides(plan.tasks[0])[0]


def _summary(graph: Graph) -> list[tuple[Any, ...]]:
    return [
        (
            node.name,
            node.parent.name if node.parent else None,
            [(p.key, p.dtype, p.shape, p.max, p.min, p.mean, p.norm) for p in node.params or ()],
        )
        for node in graph.post_order()
    ]


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_the_export_reads_back_as_the_merged_graph(
    exports: Exports, parallel_dump: DumpFn, name: str
) -> None:
    folder = exports[name][0]
    read_back = build_graph(RankDir(0, 0, folder), "NPU", None)
    assert _summary(read_back) == _summary(_merged_graph(name, parallel_dump))
    assert read_back.orphans == []
    run = graph_build("-tp", folder, "-o", folder.parent.parent / "db", "-q")  # a db of it too
    assert run.returncode == 0 and run.stderr == "", run.stderr
