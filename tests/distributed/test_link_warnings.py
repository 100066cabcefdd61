"""Missing peers and disagreeing groups: a warning that names them, never a crash or a hang."""

from __future__ import annotations

from pathlib import Path

from comm_dumps import CommDump, group, record, reduce_op, scalar, tensor

A = tensor([1.0, 2.0, 3.0, 4.0])
TWICE = tensor([2.0, 4.0, 6.0, 8.0])


def test_peer_rank_missing_from_the_dump(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    dump.add(0, "Distributed.send.0.forward", record([A], {"dst": scalar(3)}, [A, scalar(3)]))
    dump.add(1, "Functional.relu.0.forward", record([A], {}, [A]))  # not a comm op
    built = dump.build()

    (warning,) = built.result.warnings
    assert "rank 3 is not in the dump" in warning
    assert "Distributed.send.0.forward on rank 0" in warning
    assert built.annotation(0, "Distributed.send.0.forward") == {}
    assert built.links(0, "Distributed.send.0.forward") == [
        (3, None, "send", "unknown", "rank 3 is not in the dump")
    ]
    assert built.query("SELECT linked_peers, missing_peers FROM gb_comm_nodes WHERE rank = 0") == [
        (0, 1)
    ]
    assert built.query("SELECT rank, in_dump FROM gb_topology_ranks ORDER BY rank") == [
        (0, 1),
        (1, 1),
        (3, 0),
    ]
    assert built.query("SELECT src_rank, dst_rank, unlinked, status FROM gb_topology") == [
        (0, 3, 1, "missing")
    ]
    assert built.meta_links()["topology"]["missing_ranks"] == {"NPU/0": [3]}


def test_group_member_missing_from_the_dump(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    pg = group([0, 1, 2], "tp0")
    for rank in range(2):
        dump.add(rank, "Distributed.all_reduce.0.forward", record([A], {"group": pg}, [TWICE, pg]))
    built = dump.build()

    assert any("rank 2 is not in the dump" in warning for warning in built.result.warnings)
    # the members that are there still link to each other
    assert built.peers(0, "Distributed.all_reduce.0.forward") == {
        "1": "Distributed.all_reduce.0.forward"
    }
    rows = built.links(0, "Distributed.all_reduce.0.forward")
    assert (2, None, "send_receive", "unknown", "rank 2 is not in the dump") in rows


def test_group_members_disagreeing_on_the_call_count(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    for rank, calls in [(0, 2), (1, 1)]:
        for call in range(calls):
            dump.add(
                rank,
                f"Distributed.all_reduce.{call}.forward",
                record([A], {"op": reduce_op()}, [TWICE, reduce_op()]),
            )
    built = dump.build()

    (warning,) = built.result.warnings
    assert "group default (ranks 0-1)" in warning and "all_reduce" in warning
    assert "2 time(s) on rank(s) 0" in warning and "1 time(s) on rank(s) 1" in warning
    assert built.peers(0, "Distributed.all_reduce.0.forward") == {
        "1": "Distributed.all_reduce.0.forward"
    }
    assert built.links(0, "Distributed.all_reduce.1.forward") == [
        (1, None, "send_receive", "unknown", "rank 1 has no matching call")
    ]


def test_a_dumped_rank_without_comm_nodes_still_belongs_to_the_default_group(
    tmp_path: Path,
) -> None:
    dump = CommDump(tmp_path)
    for rank in range(2):
        dump.add(rank, "Distributed.barrier.0.forward", record())
    dump.add(2, "Functional.relu.0.forward", record([A], {}, [A]))
    built = dump.build()

    (warning,) = built.result.warnings
    assert "1 time(s) on rank(s) 0-1" in warning and "0 time(s) on rank(s) 2" in warning


def test_point_to_point_count_mismatch_and_missing_src(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    dump.add(0, "Distributed.send.0.forward", record([A], {"dst": scalar(1)}, [A]))
    dump.add(0, "Distributed.send.1.forward", record([A], {"dst": scalar(1)}, [A]))
    dump.add(1, "Distributed.recv.0.forward", record([None], {"src": scalar(0)}, [A]))
    dump.add(1, "Distributed.recv.1.forward", record([None], {}, [A]))  # receive from any source
    built = dump.build()

    warnings = "\n".join(built.result.warnings)
    assert "rank 0 sends 2 message(s) to rank 1, but rank 1 receives 1 from rank 0" in warnings
    assert "Distributed.recv.1.forward names no peer rank" in warnings
    assert built.peers(1, "Distributed.recv.0.forward") == {"0": "Distributed.send.0.forward"}
    assert built.annotation(0, "Distributed.send.1.forward") == {}


def test_broadcast_whose_root_is_missing(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    for rank in range(2):
        dump.add(rank, "Distributed.broadcast.0.forward", record([A], {"src": scalar(5)}, [A]))
    built = dump.build()

    (warning,) = built.result.warnings
    assert "rank 5 is not in the dump" in warning and "2 communication op(s)" in warning
    assert built.links(1, "Distributed.broadcast.0.forward") == [
        (5, None, "receive", "unknown", "rank 5 is not in the dump")
    ]
