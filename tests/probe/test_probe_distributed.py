"""Two gloo processes under the probe: Distributed.* records, their peers and process groups."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from probe_dist_worker import WORLD_SIZE
from probe_models import load

from graphboard.dump.layout import discover
from graphboard.graph.builder import build_graph


@pytest.fixture
def dump_root(ddp_dump_root: Path) -> Path:
    return ddp_dump_root


def records(dump_root: Path, rank: int) -> dict[str, Any]:
    data: dict[str, Any] = load(dump_root / "step0" / f"rank{rank}", "dump.json")["data"]
    return data


def test_one_folder_per_rank(dump_root: Path) -> None:
    layout = discover(dump_root)
    assert [(item.step, item.rank) for item in layout.ranks] == [(0, 0), (0, 1)]
    for item in layout.ranks:
        graph = build_graph(item)
        assert "Module.0.Linear.forward.0" in graph.nodes
        assert not graph.orphans


def test_collectives(dump_root: Path) -> None:
    for rank in range(WORLD_SIZE):
        data = records(dump_root, rank)
        distributed = [name for name in data if name.startswith("Distributed.")]
        assert distributed == [
            "Distributed.broadcast.0.forward",
            "Distributed.all_reduce.0.forward",
            "Distributed.all_reduce.1.forward",
            "Distributed.all_reduce.2.forward",
            "Distributed.all_gather.0.forward",
            "Distributed.send.0.forward" if rank == 0 else "Distributed.recv.0.forward",
            "Distributed.irecv.0.forward" if rank == 0 else "Distributed.isend.0.forward",
            "Distributed.batch_isend_irecv.0.forward",
            "Distributed.reduce.0.forward",
            "Distributed.gather.0.forward",
            "Distributed.scatter.0.forward",
            "Distributed.reduce_scatter.0.forward",
            "Distributed.all_to_all.0.forward",
            "Distributed.barrier.0.forward",
        ]
        broadcast = data["Distributed.broadcast.0.forward"]
        assert broadcast["input_kwargs"] == {"src": {"type": "int", "value": 0}}
        assert broadcast["output"][0]["Max"] == 2.0  # rank 0's values on both ranks, after the call
        assert broadcast["output"][1] == {"type": "int", "value": 0}
        grouped = data["Distributed.all_reduce.2.forward"]["input_kwargs"]["group"]
        assert grouped["type"] == "torch.ProcessGroup" and grouped["group_ranks"] == [0, 1]
        gather = data["Distributed.all_gather.0.forward"]
        assert gather["input_args"][0] is None  # the receive list holds nothing yet: masked
        assert [leaf["shape"] for leaf in gather["output"][0]] == [[1], [1]]
    ids = {
        records(dump_root, rank)["Distributed.all_reduce.2.forward"]["input_kwargs"]["group"][
            "group_id"
        ]
        for rank in range(2)
    }
    assert len(ids) == 1  # the same group has the same id on every rank
    grads = [
        records(dump_root, rank)["Distributed.all_reduce.0.forward"]["output"][0]
        for rank in range(2)
    ]
    assert grads[0]["Norm"] == grads[1]["Norm"]  # summed over ranks: equal afterwards


def test_point_to_point(dump_root: Path) -> None:
    sender, receiver = records(dump_root, 0), records(dump_root, 1)
    send = sender["Distributed.send.0.forward"]
    assert send["input_kwargs"] == {"dst": {"type": "int", "value": 1}}
    recv = receiver["Distributed.recv.0.forward"]
    assert recv["input_args"] == [None]  # the buffer before the call is masked
    assert recv["input_kwargs"] == {"src": {"type": "int", "value": 0}}
    assert recv["output"][0]["Max"] == 7.0 and recv["output"][1] == {"type": "int", "value": 0}
    irecv = sender["Distributed.irecv.0.forward"]
    assert irecv["output"][0]["Max"] == 9.0  # recorded once waited on, when the data is there
    assert receiver["Distributed.isend.0.forward"]["input_kwargs"] == {
        "dst": {"type": "int", "value": 0}
    }


def test_batch_isend_irecv(dump_root: Path) -> None:
    for rank in range(WORLD_SIZE):
        batch = records(dump_root, rank)["Distributed.batch_isend_irecv.0.forward"]
        before, after = batch["input_args"][0], batch["output"][0]
        assert [op["op"] for op in after] == ["isend", "irecv"]
        assert all(
            op["class_type"] == "torch.distributed.P2POp" and op["peer"] == 1 - rank for op in after
        )
        assert before[1]["tensor"] is None  # receive buffer masked before the call
        assert after[1]["tensor"]["Max"] == float(2 - rank)  # what the peer sent


def test_receive_buffers_are_masked_before_the_call(dump_root: Path) -> None:
    for rank in range(WORLD_SIZE):
        data = records(dump_root, rank)
        scatter = data["Distributed.scatter.0.forward"]
        assert scatter["input_args"][0] is None
        assert scatter["output"][0]["Max"] == 5.0 + rank
        reduce_scatter = data["Distributed.reduce_scatter.0.forward"]
        assert reduce_scatter["input_args"][0] is None
        assert reduce_scatter["output"][0]["Max"] == 2.0 * rank  # rank r gets the sum of slot r
        assert data["Distributed.all_to_all.0.forward"]["input_args"][0] is None
        exchanged = data["Distributed.all_to_all.0.forward"]["output"][0]
        assert [leaf["Max"] for leaf in exchanged] == [float(rank), float(10 + rank)]
        assert data["Distributed.gather.0.forward"]["input_args"][1] is None
        assert data["Distributed.reduce.0.forward"]["input_kwargs"] == {
            "dst": {"type": "int", "value": 0}
        }
    gathered = records(dump_root, 0)["Distributed.gather.0.forward"]["output"][1]
    assert [leaf["Max"] for leaf in gathered] == [3.0, 2.0]  # after the reduce into rank 0
