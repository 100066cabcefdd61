"""Flattening dump.json records into named, typed parameters, named exactly as msprobe names
them (reference-builder.md §1.3), and locating tensor files without loading them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from dumpmaker import (
    RankDump,
    backward_record,
    build,
    fixture_path,
    process_group,
    record,
    scalar,
    tensor,
)
from fixture_cases import FIXTURES
from graphboard.dump.layout import discover
from graphboard.dump.records import MAX_DEPTH, Param, Role, batch_p2p_ops, parse_record
from graphboard.errors import DumpError
from graphboard.graph.builder import DumpRecords, build_graph

DUMP = Path("dump.json")


def _names(name: str, data: Any) -> list[str]:
    return [param.full_name(name) for param in parse_record(name, data, DUMP)]


def _by_key(name: str, data: Any) -> dict[str, Param]:
    return {param.key: param for param in parse_record(name, data, DUMP)}


def test_forward_record_names_follow_msprobe() -> None:
    data = {
        "input_args": [tensor(), scalar(2), None, [tensor(), tensor()]],
        "input_kwargs": {"dim": scalar(-1), "cache": {"k": tensor()}},
        "output": [tensor(), [tensor(), tensor()]],
        "parameters": {"weight": tensor(), "bias": tensor()},
    }
    assert _names("Module.fc.Linear.forward.0", data) == [
        "Module.fc.Linear.forward.0.input.0",
        "Module.fc.Linear.forward.0.input.1",
        "Module.fc.Linear.forward.0.input.2",
        "Module.fc.Linear.forward.0.input.3.0",
        "Module.fc.Linear.forward.0.input.3.1",
        "Module.fc.Linear.forward.0.input.dim",
        "Module.fc.Linear.forward.0.input.cache.k",
        "Module.fc.Linear.forward.0.output.0",
        "Module.fc.Linear.forward.0.output.1.0",
        "Module.fc.Linear.forward.0.output.1.1",
        "Module.fc.Linear.forward.0.parameters.weight",
        "Module.fc.Linear.forward.0.parameters.bias",
    ]


def test_sections_are_visited_in_msprobe_order_whatever_the_key_order() -> None:
    data = {
        "parameters": {"weight": tensor()},
        "output": [tensor()],
        "input_kwargs": {"x": tensor()},
        "input_args": [tensor()],
    }
    params = parse_record("Module.a.A.forward.0", data, DUMP)
    assert [(param.key, param.role) for param in params] == [
        ("input.0", Role.INPUT),
        ("input.x", Role.INPUT),
        ("output.0", Role.OUTPUT),
        ("parameters.weight", Role.PARAMETERS),
    ]


def test_backward_records_use_input_and_output() -> None:
    data = backward_record(inputs=[tensor(), None], output=[tensor()])
    assert _names("Torch.mm.0.backward", data) == [
        "Torch.mm.0.backward.input.0",
        "Torch.mm.0.backward.input.1",
        "Torch.mm.0.backward.output.0",
    ]


@pytest.mark.parametrize(
    "name", ["Module.a.Linear.parameters_grad.0", "Module.a.Linear.parameters_grad"]
)
def test_parameters_grad_entries_are_named_by_parameter_without_list_index(name: str) -> None:
    params = parse_record(name, {"weight": [tensor(1)], "bias": [tensor(2)]}, DUMP)
    assert [param.full_name(name) for param in params] == [f"{name}.weight", f"{name}.bias"]
    assert [param.key for param in params] == ["weight", "bias"]
    assert {param.role for param in params} == {Role.PARAMETERS_GRAD}
    assert [param.max for param in params] == [1.0, 2.0]


def test_a_parameters_grad_entry_with_several_leaves_keeps_them_apart() -> None:
    params = parse_record("Module.a.A.parameters_grad.0", {"w": [tensor(1), tensor(2)]}, DUMP)
    assert [param.key for param in params] == ["w.0", "w.1"]


def test_tensor_statistics_and_other_fields_keep_their_types() -> None:
    """An integer tensor's statistics stay integers: msprobe shows its Max of 3 as "3"."""
    leaf = tensor(
        stats=(3, -1, 0.5, 7.0),
        shape=[4, 2],
        dtype="torch.int64",
        requires_grad=True,
        md5="0a1b2c3d",
    )
    param = parse_record("Torch.mm.0.forward", record(args=[leaf]), DUMP)[0]
    assert param.is_tensor and not param.is_null
    assert (param.type, param.dtype, param.shape) == ("torch.Tensor", "torch.int64", (4, 2))
    stats = [param.max, param.min, param.mean, param.norm]
    assert stats == [3, -1, 0.5, 7.0]
    assert [type(value) for value in stats] == [int, int, float, float]
    assert param.requires_grad is True and param.md5 == "0a1b2c3d"
    assert param.data_name is None and param.extra is None


def test_the_strings_every_param_repeats_are_shared() -> None:
    """A real dump's Params hold one string per distinct key, type and dtype, not one each: a
    million tensors' "torch.Tensor" would be a million strings (memory, and a side handed to
    another process pickles each of them)."""
    fixture_path()  # skips without ../shared
    for path in sorted(FIXTURES.rglob("dump.json")):
        params = [param for record in DumpRecords(path).params.values() for param in record]
        for field in ("key", "type", "dtype"):
            values = [getattr(param, field) for param in params]
            texts = [value for value in values if isinstance(value, str)]
            assert texts, (path, field)
            assert all(sys.intern(text) is text for text in texts), (path, field)


def test_statistics_msprobe_leaves_out_stay_none() -> None:
    """NZ-format tensors have null statistics; integer tensors have no Mean/Norm."""
    leaf = {"type": "torch.Tensor", "dtype": "torch.int32", "shape": [3], "Max": 5, "Min": 1}
    param = parse_record("Torch.add.0.forward", record(args=[leaf]), DUMP)[0]
    assert (param.max, param.min, param.mean, param.norm) == (5, 1, None, None)
    assert param.requires_grad is None


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (1, "<class 'int'>"),
        (0.5, "<class 'float'>"),
        (True, "<class 'bool'>"),
        ("mean", "<class 'str'>"),
    ],
)
def test_scalar_leaves_keep_their_value_as_every_statistic(value: Any, dtype: str) -> None:
    param = parse_record("Torch.sum.0.forward", record(args=[scalar(value)]), DUMP)[0]
    assert not param.is_tensor
    assert (param.type, param.dtype, param.shape, param.value) == (
        type(value).__name__,
        dtype,
        (),
        value,
    )
    assert [param.max, param.min, param.mean, param.norm] == [value] * 4
    assert type(param.max) is type(value)


def test_a_bare_json_scalar_is_read_as_msprobe_would_have_written_it() -> None:
    param = parse_record("Torch.sum.0.forward", record(output=[7]), DUMP)[-1]
    assert (param.key, param.type, param.value, param.max) == ("output.0", "int", 7, 7)


def test_null_leaves_are_kept_as_empty_entries() -> None:
    data = record(args=[None, tensor()], kwargs={"bias": None}, output=[None])
    params = _by_key("Functional.linear.0.forward", data)
    assert list(params) == ["input.0", "input.1", "input.bias", "output.0"]
    for key in ("input.0", "input.bias", "output.0"):
        assert params[key].is_null and params[key].type is None and params[key].max is None
    assert params["output.0"].role is Role.OUTPUT
    assert not params["input.1"].is_null


def test_empty_lists_and_dicts_give_no_entries() -> None:
    assert _names("Torch.x.0.forward", {"input_args": [], "input_kwargs": {}, "output": []}) == []


def test_process_group_leaves_show_their_ranks() -> None:
    data = record(args=[tensor()], kwargs={"group": process_group([0, 1], "g-hash")})
    param = _by_key("Distributed.all_reduce.0.forward", data)["input.group"]
    assert param.type == "torch.ProcessGroup" and not param.is_tensor
    assert param.shape == ()
    assert param.max == param.min == param.mean == param.norm == "[0, 1]"
    assert param.md5 == "[0, 1]"
    assert param.extra == {"group_ranks": [0, 1], "group_id": "g-hash"}


@pytest.mark.parametrize("peer", ["src", "dst", "group_src", "group_dst"])
def test_peer_arguments_are_kept_as_text(peer: str) -> None:
    data = record(args=[tensor()], kwargs={peer: scalar(1)})
    param = _by_key("Distributed.send.0.forward", data)[f"input.{peer}"]
    assert (param.dtype, param.shape, param.max, param.md5) == ("int", (), "1", "1")


def test_size_slice_and_ellipsis_leaves() -> None:
    data = record(
        args=[
            {"type": "torch.Size", "value": [2, 3]},
            {"type": "slice", "value": [0, 4, None]},
            {"type": "ellipsis", "value": "..."},
        ]
    )
    size, cut, dots = parse_record("Tensor.__getitem__.0.forward", data, DUMP)[:3]
    assert (size.dtype, size.shape, size.value, size.max) == ("torch.Size", (2, 3), [2, 3], None)
    assert (cut.dtype, cut.shape) == ("slice", (3,))
    assert (dots.shape, dots.max) == ((), "...")


def test_p2p_op_leaves_and_batch_isend_irecv_ops() -> None:
    op = {
        "class_type": "torch.distributed.P2POp",
        "op": "isend",
        "peer": 1,
        "tag": 0,
        "group_id": "world",
        "tensor": tensor(),
    }
    data = record(args=[[op]], output=[[op, {**op, "op": "irecv", "peer": 0}]])
    param = parse_record("Distributed.batch_isend_irecv.0.forward", data, DUMP)[0]
    assert param.type == "torch.distributed.P2POp"
    assert param.extra is not None and param.extra["peer"] == 1
    assert batch_p2p_ops(data) == [
        {"op": "isend", "peer": 1, "group_id": "world"},
        {"op": "irecv", "peer": 0, "group_id": "world"},
    ]
    assert batch_p2p_ops([1]) == [] and batch_p2p_ops(record()) == []


def test_unknown_leaf_fields_are_kept_as_extras() -> None:
    param = parse_record("Torch.x.0.forward", record(args=[tensor(device="npu:0")]), DUMP)[0]
    assert param.extra == {"device": "npu:0"}


def test_nesting_deeper_than_msprobe_allows_names_the_record() -> None:
    value: Any = tensor()
    for _ in range(MAX_DEPTH + 1):
        value = [value]
    with pytest.raises(DumpError) as caught:
        parse_record("Torch.deep.0.forward", record(args=[value]), DUMP)
    assert str(caught.value) == (
        f"dump.json: record 'Torch.deep.0.forward': nesting deeper than {MAX_DEPTH} levels"
    )


def test_tensor_files_are_located_not_loaded(tmp_path: Path) -> None:
    """A tensor-task dump: every data_name resolves to a file in the rank's
    dump_tensor_data; a build never opens them (these are not even tensors)."""
    dump = RankDump(task="tensor", dump_data_dir="/elsewhere/dump_tensor_data")
    name = "Functional.linear.0.forward"
    dump.add(
        name,
        None,
        data=record(
            args=[tensor(data_name=f"{name}.input.0.pt")],
            output=[tensor(data_name=f"{name}.output.0.pt")],
        ),
    )
    rank = dump.write(tmp_path / "step0" / "rank0")
    (rank / "dump_tensor_data").mkdir()
    for role in ("input", "output"):
        (rank / "dump_tensor_data" / f"{name}.{role}.0.pt").write_bytes(b"not a tensor")
    graph = build(rank)
    assert graph.task == "tensor"
    assert graph.tensor_dir == str(rank / "dump_tensor_data")
    params = graph.nodes[name].params
    assert params is not None
    assert [param.data_name for param in params] == [f"{name}.input.0.pt", f"{name}.output.0.pt"]
    assert all((Path(graph.tensor_dir) / str(param.data_name)).is_file() for param in params)


def test_every_tensor_of_the_tensor_fixture_has_its_file() -> None:
    layout = discover(fixture_path("convnet-tensor", "target"))
    graph = build_graph(layout.ranks[0])
    files = {
        str(param.data_name)
        for node in graph.nodes.values()
        for param in node.params or []
        if param.data_name
    }
    assert len(files) == 245
    assert all((Path(graph.tensor_dir) / file).is_file() for file in files)
