"""Odd input msprobe's own tools accept or that parsers let pass silently: statistics that are
not numbers, repeated record names, ``""`` as a top-level parent, a dump.json that is ``{}``.
Each is built through the pipeline into a real .vis.db and read back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import graphboard.dump.jsonio as jsonio
import graphboard.dump.repeats as repeats
from dumpmaker import RankDump, build, record, tensor, tiny_model
from graphboard.compare.engine import compare_graphs
from graphboard.compare.matching import match_graphs
from graphboard.compare.result import DataMode, Level
from graphboard.compare.rules import MSG_TEXT_STATISTICS
from graphboard.pipeline import BuildOptions, BuildResult, run_build
from msprobe_runner import graph_visualize

READERS = ["small pretty", "small one-line", "big pretty", "big one-line"]


@pytest.fixture(params=READERS)
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """dump.json through each reader: parsed whole (pretty as msprobe writes it, or on one
    line), split into records (big and pretty) or streamed (big, one line)."""
    if request.param.startswith("big"):
        monkeypatch.setattr(jsonio, "STREAM_THRESHOLD_BYTES", 0)
    return str(request.param)


def _write(tmp_path: Path, dump: RankDump, reader: str = "small pretty", side: str = "t") -> Path:
    indent = None if reader.endswith("one-line") else 1
    return dump.write(tmp_path / side / "step0" / "rank0", indent=indent)


def _run(target: Path, golden: Path | None = None) -> BuildResult:
    out = target.parents[2] / "out"
    return run_build(BuildOptions(target=target, golden=golden, output_dir=out, workers=1))


def _nodes(result: BuildResult, side: str = "NPU") -> dict[str, tuple[str, str, str]]:
    """node name -> (up_node, input_data, output_data) of one side's graph."""
    with sqlite3.connect(result.path) as conn:
        rows = conn.execute(
            "SELECT node_name, up_node, input_data, output_data FROM tb_nodes "
            "WHERE data_source = ?",
            (side,),
        ).fetchall()
    return {name: (up, inputs, outputs) for name, up, inputs, outputs in rows}


def _stored_warnings(result: BuildResult) -> list[str]:
    with sqlite3.connect(result.path) as conn:
        (stored,) = conn.execute("SELECT value FROM gb_meta WHERE key = 'warnings'").fetchone()
    return list(json.loads(stored))


# --- 7. repeated keys ------------------------------------------------------------------------


def test_a_record_repeated_in_dump_json_is_named_in_a_warning(tmp_path: Path, reader: str) -> None:
    dump = tiny_model()
    dump.repeated_records.append(("Torch.relu.0.forward", record(output=[tensor(5.0)])))
    rank = _write(tmp_path, dump, reader)
    result = _run(rank)
    (warning,) = [w for w in result.warnings if "dump.json" in w]
    assert warning == (
        f"{rank / 'dump.json'}: 1 record name appears more than once, the last one kept"
        " (msprobe writes one key per record: a corrupted or concatenated dump?):"
        " Torch.relu.0.forward"
    )
    assert warning in _stored_warnings(result)
    # the last one wins, as in every JSON parser
    outputs = json.loads(_nodes(result)["Torch.relu.0.forward"][2])
    assert outputs["Torch.relu.0.forward.output.0"]["Max"] == "5.0"


def test_a_dump_json_without_repeats_gives_no_warning(tmp_path: Path, reader: str) -> None:
    dump = tiny_model()
    # an object in the header puts keys at the records' depth: the count disagrees, the exact
    # check clears the file
    dump.dump_data_dir = {"a": 1, "b": [2, "c"]}  # type: ignore[assignment]
    assert _run(_write(tmp_path, dump, reader)).warnings == []


def test_files_without_repeats_are_not_parsed_again(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counts clear a clean dump, pretty or compact; the second parse is for repeats."""

    def no_second_parse(raw: bytes, member: str | None) -> list[str]:
        raise AssertionError(f"parsed again for {member}")

    monkeypatch.setattr(repeats, "_exact_repeats", no_second_parse)
    rank = _write(tmp_path, tiny_model(), reader)
    assert build(rank).warnings == []


def test_a_construct_entry_repeated_is_named_in_a_warning(tmp_path: Path) -> None:
    dump = tiny_model()
    dump.repeated_construct.append(("Torch.relu.0.forward", "Module.net.fc.Linear.forward.0"))
    dump.repeated_construct.append(("Torch.sum.0.forward", None))
    rank = _write(tmp_path, dump)
    result = _run(rank)
    assert result.warnings == [
        f"{rank / 'construct.json'}: 2 node names appear more than once, the last one kept"
        " (msprobe writes one key per record: a corrupted or concatenated dump?):"
        " Torch.relu.0.forward, Torch.sum.0.forward"
    ]
    assert _nodes(result)["Torch.relu.0.forward"][0] == "Module.net.fc.Linear.forward.0"  # last


# --- 9. "" as the parent of a top-level node -------------------------------------------------


def test_an_empty_parent_name_means_top_level_as_in_msprobe(tmp_path: Path) -> None:
    expected = tiny_model()
    dump = tiny_model()
    dump.construct = {
        name: "" if parent is None else parent for name, parent in dump.construct.items()
    }
    assert "" in dump.construct.values()
    rank = _write(tmp_path, dump)
    graph = build(rank)
    assert "" not in graph.nodes
    reference = build(_write(tmp_path, expected, side="reference"))
    assert [node.name for node in graph.walk()] == [node.name for node in reference.walk()]
    nodes = _nodes(_run(rank))
    assert "" not in nodes
    assert nodes["Module.net.Net.forward.0"][0] == "DefaultModel"
    assert nodes["Module.net.Net.backward.0"][0] == "DefaultModel"
    assert nodes["Torch.sum.0.forward"][0] == "DefaultModel"


# --- 10. a dump.json that is {} ---------------------------------------------------------------


def test_an_empty_dump_json_builds_the_hierarchy_from_construct_json(
    tmp_path: Path, reader: str
) -> None:
    rank = _write(tmp_path, tiny_model(), reader)
    (rank / "dump.json").write_text("{}\n" if reader.startswith("small") else "{ }")
    result = _run(rank)
    assert result.warnings == [
        f"{rank / 'dump.json'}: dump.json is {{}} (no task, no records):"
        " the graph is built from construct.json alone, without parameters"
    ]
    nodes = _nodes(result)
    construct = json.loads((rank / "construct.json").read_text())
    assert set(nodes) == {"DefaultModel", *construct}
    assert nodes["Functional.linear.0.forward"] == ("Module.net.fc.Linear.forward.0", "{}", "{}")
    with sqlite3.connect(result.path) as conn:
        (task,) = conn.execute("SELECT task FROM gb_graphs").fetchone()
    assert task == "structure"


# --- 6. statistics that are not numbers ------------------------------------------------------


def _text_statistics_dump() -> RankDump:
    dump = tiny_model()
    dump.data["Torch.relu.0.forward"] = record(output=[tensor(stats=("1.76abc", 1.0, 1.0, 1.0))])
    dump.data["Torch.sum.0.forward"] = record(args=[tensor(stats=(1.0, 1.0, [1], "x"))])
    return dump


def test_statistics_that_are_not_numbers_are_reported_once_per_file(
    tmp_path: Path, reader: str
) -> None:
    target = _write(tmp_path, _text_statistics_dump(), reader)
    golden = _write(tmp_path, tiny_model(), reader, side="g")
    result = _run(target, golden)
    assert result.warnings == [
        f"{target / 'dump.json'}: 3 tensor statistics are not numbers (scored as warnings"
        " where msprobe passes them), the first in record 'Torch.relu.0.forward':"
        " output.0 Max '1.76abc'"
    ]


def test_a_statistic_that_is_not_a_number_is_a_warning_on_its_row(tmp_path: Path) -> None:
    target = _write(tmp_path, _text_statistics_dump())
    golden = _write(tmp_path, tiny_model(), side="g")
    nodes = _nodes(_run(target, golden))
    relu = json.loads(nodes["Torch.relu.0.forward"][2])["Torch.relu.0.forward.output.0"]
    assert relu["Max"] == "1.76abc" and relu["Max diff"] == "N/A"  # as msprobe shows it
    assert relu["Result"] == "warning"
    assert json.loads(relu["Err_message"]) == [MSG_TEXT_STATISTICS.format("target Max '1.76abc'")]
    total = json.loads(nodes["Torch.sum.0.forward"][1])["Torch.sum.0.forward.input.0"]
    assert json.loads(total["Err_message"]) == [
        MSG_TEXT_STATISTICS.format("target Mean '[1]', Norm 'x'")
    ]
    passed = json.loads(nodes["Torch.relu.0.forward"][1])["Torch.relu.0.forward.input.0"]
    assert passed["Result"] == "pass"


def test_the_row_rule_reads_both_sides(tmp_path: Path) -> None:
    target = build(_write(tmp_path, tiny_model()))
    golden = build(_write(tmp_path, _text_statistics_dump(), side="g"))
    match_graphs(target, golden)
    compare_graphs(target, golden, DataMode.SUMMARY)
    comparison = target.nodes["Torch.relu.0.forward"].comparison
    assert comparison is not None and comparison.level is Level.WARNING
    row = comparison.rows[-1]
    assert row.messages == [MSG_TEXT_STATISTICS.format("golden Max '1.76abc'")]


def _leaf_stats(value: Any) -> dict[str, Any]:
    return record(args=[], output=[tensor(stats=(value, value, value, value))])


@pytest.mark.parametrize("value", [None, True, 3, 1.5])
def test_numbers_none_and_booleans_are_not_flagged(tmp_path: Path, value: Any) -> None:
    dump = tiny_model()
    dump.data["Torch.relu.0.forward"] = _leaf_stats(value)
    assert _run(_write(tmp_path, dump)).warnings == []


def test_the_golden_dumps_warnings_travel_with_its_records(tmp_path: Path) -> None:
    """A compare's writing process parses the golden dump.json and hands its records over."""
    golden_dump = _text_statistics_dump()
    golden_dump.repeated_records.append(("Torch.relu.0.forward", record()))
    target = _write(tmp_path, tiny_model())
    golden = _write(tmp_path, golden_dump, side="g")
    warnings = _run(target, golden).warnings
    assert [warning.split(": ")[0] for warning in warnings] == [str(golden / "dump.json")] * 2
    assert "record name appears more than once" in warnings[0]
    assert "2 tensor statistics are not numbers" in warnings[1]  # the repeat replaced one


# --- against msprobe itself (skips without it: see msprobe_runner) ----------------------------


def _structure(path: Path, side: str = "NPU") -> set[tuple[str, str, tuple[str, ...], int, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT node_name, up_node, sub_nodes, node_order, node_type FROM tb_nodes "
            "WHERE data_source = ?",
            (side,),
        ).fetchall()
    return {
        (name, up, tuple(json.loads(sub)) if sub else (), order, str(kind))
        for name, up, sub, order, kind in rows
    }


@pytest.mark.parametrize("case", ["empty parent", "empty dump.json"])
def test_the_hierarchy_agrees_with_msprobe(tmp_path: Path, case: str) -> None:
    dump = tiny_model()
    if case == "empty parent":
        dump.construct = {name: parent or "" for name, parent in dump.construct.items()}
    rank = _write(tmp_path, dump)
    if case == "empty dump.json":
        (rank / "dump.json").write_text("{}")
    theirs = graph_visualize(tmp_path / "msprobe", "-tp", str(rank))
    assert _structure(_run(rank).path) == _structure(theirs)


def test_msprobe_passes_a_statistic_that_is_not_a_number(tmp_path: Path) -> None:
    target = _write(tmp_path, _text_statistics_dump())
    golden = _write(tmp_path, tiny_model(), side="g")
    theirs = graph_visualize(tmp_path / "msprobe", "-tp", str(target), "-gp", str(golden))
    ours = _run(target, golden).path
    query = (
        "SELECT precision_index, output_data FROM tb_nodes "
        "WHERE node_name = 'Torch.relu.0.forward' AND data_source = 'NPU'"
    )
    outcomes = []
    for path in (theirs, ours):
        with sqlite3.connect(path) as conn:
            precision, outputs = conn.execute(query).fetchone()
        row = json.loads(outputs)["Torch.relu.0.forward.output.0"]
        outcomes.append((float(precision), row["Max diff"], row["Result"]))
    assert outcomes == [(0.0, "N/A", "pass"), (0.5, "N/A", "warning")]
