"""Every family of communication op is linked across ranks, on tiny dumps through the real pipeline."""

from __future__ import annotations

from pathlib import Path

from comm_dumps import CommDump, group, p2p_op, record, reduce_op, scalar, tensor

A = tensor([1.0, 2.0, 3.0, 4.0])
B = tensor([4.0, 3.0, 2.0, 1.0])
C = tensor([0.0, 1.0, 0.0, 1.0])
ZERO = tensor([0.0, 0.0, 0.0, 0.0])


def _all_consistent(built: object, rank: int, name: str) -> None:
    rows = built.links(rank, name)  # type: ignore[attr-defined]
    assert rows, f"{name} on rank {rank} has no links"
    assert {row[3] for row in rows} == {"consistent"}, rows


def test_send_recv_and_isend_irecv(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    dump.add(0, "Distributed.send.0.forward", record([A], {"dst": scalar(1)}, [A, scalar(1)]))
    dump.add(0, "Distributed.irecv.0.forward", record([None], {"src": scalar(1)}, [B, scalar(1)]))
    dump.add(1, "Distributed.recv.0.forward", record([None], {"src": scalar(0)}, [A, scalar(0)]))
    dump.add(1, "Distributed.isend.0.forward", record([B], {"dst": scalar(0)}, [None, scalar(0)]))
    built = dump.build()

    assert built.annotation(0, "Distributed.send.0.forward") == {
        "communications_type": "send",
        "nodes_info": {"1": ["Nan", "Distributed.recv.0.forward"]},
    }
    assert built.annotation(1, "Distributed.recv.0.forward") == {
        "communications_type": "receive",
        "nodes_info": {"0": ["Nan", "Distributed.send.0.forward"]},
    }
    assert built.peers(0, "Distributed.irecv.0.forward") == {"1": "Distributed.isend.0.forward"}
    assert built.peers(1, "Distributed.isend.0.forward") == {"0": "Distributed.irecv.0.forward"}
    for rank, name in [(0, "Distributed.send.0.forward"), (1, "Distributed.isend.0.forward")]:
        _all_consistent(built, rank, name)
    assert built.result.warnings == []


def test_positional_peer_and_mixed_blocking_calls_pair_in_order(tmp_path: Path) -> None:
    """An isend pairs with a recv: one message sequence per (sender, receiver)."""
    dump = CommDump(tmp_path)
    dump.add(0, "Distributed.isend.0.forward", record([A, scalar(1)], {}, [None, scalar(1)]))
    dump.add(0, "Distributed.send.0.forward", record([B, scalar(1)], {}, [B, scalar(1)]))
    dump.add(1, "Distributed.recv.0.forward", record([None, scalar(0)], {}, [A, scalar(0)]))
    dump.add(1, "Distributed.irecv.0.forward", record([None, scalar(0)], {}, [B, scalar(0)]))
    built = dump.build()

    assert built.peers(1, "Distributed.recv.0.forward") == {"0": "Distributed.isend.0.forward"}
    assert built.peers(1, "Distributed.irecv.0.forward") == {"0": "Distributed.send.0.forward"}
    _all_consistent(built, 1, "Distributed.recv.0.forward")
    _all_consistent(built, 1, "Distributed.irecv.0.forward")


def test_broadcast_links_root_to_every_member_of_the_default_group(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    for rank in range(3):
        sent = A if rank == 0 else ZERO
        dump.add(
            rank,
            "Distributed.broadcast.0.forward",
            record([sent], {"src": scalar(0)}, [A, scalar(0)]),
        )
    built = dump.build()

    root = built.annotation(0, "Distributed.broadcast.0.forward")
    assert root["communications_type"] == "send"
    assert set(root["nodes_info"]) == {"1", "2"}
    for rank in (1, 2):
        member = built.annotation(rank, "Distributed.broadcast.0.forward")
        assert member == {
            "communications_type": "receive",
            "nodes_info": {"0": ["Nan", "Distributed.broadcast.0.forward"]},
        }
        _all_consistent(built, rank, "Distributed.broadcast.0.forward")


def test_scatter_and_gather(tmp_path: Path) -> None:
    chunks = [A, B, C]
    dump = CommDump(tmp_path)
    for rank in range(3):
        if rank == 0:
            scatter = record([ZERO, chunks], {"src": scalar(0)}, [A, chunks, scalar(0)])
            gather = record([A, [ZERO] * 3], {"dst": scalar(0)}, [A, chunks, scalar(0)])
        else:
            scatter = record([ZERO], {"src": scalar(0)}, [chunks[rank], scalar(0)])
            gather = record([chunks[rank]], {"dst": scalar(0)}, [chunks[rank], scalar(0)])
        dump.add(rank, "Distributed.scatter.0.forward", scatter)
        dump.add(rank, "Distributed.gather.0.forward", gather)
    built = dump.build()

    assert built.annotation(0, "Distributed.scatter.0.forward")["communications_type"] == "send"
    assert built.annotation(0, "Distributed.gather.0.forward")["communications_type"] == "receive"
    assert set(built.peers(0, "Distributed.gather.0.forward")) == {"1", "2"}
    for rank in (1, 2):
        assert (
            built.annotation(rank, "Distributed.scatter.0.forward")["communications_type"]
            == "receive"
        )
        assert (
            built.annotation(rank, "Distributed.gather.0.forward")["communications_type"] == "send"
        )
        _all_consistent(built, rank, "Distributed.scatter.0.forward")
        _all_consistent(built, rank, "Distributed.gather.0.forward")


def test_reduce_links_members_to_the_root_and_checks_the_sum(tmp_path: Path) -> None:
    total = tensor([5.0, 6.0, 5.0, 6.0])
    dump = CommDump(tmp_path)
    for rank, mine in enumerate([A, B, C]):
        result = total if rank == 1 else mine
        dump.add(
            rank,
            "Distributed.reduce.0.forward",
            record([mine, scalar(1)], {"op": reduce_op()}, [result]),
        )
    built = dump.build()

    assert built.annotation(1, "Distributed.reduce.0.forward")["communications_type"] == "receive"
    assert set(built.peers(1, "Distributed.reduce.0.forward")) == {"0", "2"}
    assert built.peers(2, "Distributed.reduce.0.forward") == {"1": "Distributed.reduce.0.forward"}
    _all_consistent(built, 1, "Distributed.reduce.0.forward")


def test_all_reduce_without_group_links_every_rank_to_every_other(tmp_path: Path) -> None:
    total = tensor([5.0, 6.0, 5.0, 6.0])
    dump = CommDump(tmp_path)
    for rank, mine in enumerate([A, B, C]):
        for call in range(2):
            name = f"Distributed.all_reduce.{call}.forward"
            dump.add(rank, name, record([mine], {"op": reduce_op()}, [total, reduce_op()]))
    built = dump.build()

    for rank in range(3):
        for call in range(2):
            name = f"Distributed.all_reduce.{call}.forward"
            annotation = built.annotation(rank, name)
            assert annotation["communications_type"] == "send_receive"
            others = {str(other) for other in range(3) if other != rank}
            assert built.peers(rank, name) == dict.fromkeys(others, name)
            _all_consistent(built, rank, name)
    assert built.query("SELECT DISTINCT group_key FROM gb_peer_links") == [("default",)]


def test_explicit_groups_link_only_their_members(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    for rank in range(4):
        members = [0, 1] if rank < 2 else [2, 3]
        pg = group(members, f"group{members[0]}")
        mine = A if rank % 2 == 0 else B
        total = tensor([5.0, 5.0, 5.0, 5.0])
        dump.add(
            rank, "Distributed.all_reduce.0.forward", record([mine], {"group": pg}, [total, pg])
        )
    built = dump.build()

    assert built.peers(0, "Distributed.all_reduce.0.forward") == {
        "1": "Distributed.all_reduce.0.forward"
    }
    assert built.peers(3, "Distributed.all_reduce.0.forward") == {
        "2": "Distributed.all_reduce.0.forward"
    }
    edges = built.query("SELECT src_rank, dst_rank FROM gb_topology ORDER BY 1, 2")
    assert edges == [(0, 1), (1, 0), (2, 3), (3, 2)]
    components = built.query("SELECT rank, component FROM gb_topology_ranks ORDER BY rank")
    assert components == [(0, 0), (1, 0), (2, 1), (3, 1)]
    assert built.result.warnings == []


def test_all_gather_and_all_gather_into_tensor(tmp_path: Path) -> None:
    parts = [tensor([1.0, 2.0]), tensor([3.0, 4.0]), tensor([5.0, 6.0])]
    whole = tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    dump = CommDump(tmp_path)
    for rank in range(3):
        dump.add(
            rank,
            "Distributed.all_gather.0.forward",
            record([None, parts[rank]], {}, [parts, parts[rank]]),
        )
        dump.add(
            rank,
            "Distributed.all_gather_into_tensor.0.forward",
            record([tensor([0.0] * 6), parts[rank]], {}, [whole, parts[rank]]),
        )
    built = dump.build()

    for rank in range(3):
        for name in (
            "Distributed.all_gather.0.forward",
            "Distributed.all_gather_into_tensor.0.forward",
        ):
            assert built.annotation(rank, name)["communications_type"] == "send_receive"
            assert len(built.peers(rank, name)) == 2
            _all_consistent(built, rank, name)


def test_reduce_scatter_and_reduce_scatter_tensor(tmp_path: Path) -> None:
    # rank r contributes [r+1, r+1] to every chunk; chunk sums are [6, 6]
    lists = {rank: [tensor([rank + 1.0] * 2)] * 3 for rank in range(3)}
    summed = tensor([6.0, 6.0])
    dump = CommDump(tmp_path)
    for rank in range(3):
        dump.add(
            rank,
            "Distributed.reduce_scatter.0.forward",
            record(
                [tensor([0.0, 0.0]), lists[rank]],
                {"op": reduce_op()},
                [summed, lists[rank], reduce_op()],
            ),
        )
        dump.add(
            rank,
            "Distributed.reduce_scatter_tensor.0.forward",
            record(
                [tensor([0.0, 0.0]), tensor([rank + 1.0] * 6)],
                {},
                [summed, tensor([rank + 1.0] * 6)],
            ),
        )
    built = dump.build()

    for rank in range(3):
        for name in (
            "Distributed.reduce_scatter.0.forward",
            "Distributed.reduce_scatter_tensor.0.forward",
        ):
            assert len(built.peers(rank, name)) == 2
            _all_consistent(built, rank, name)


def test_all_to_all_and_all_to_all_single(tmp_path: Path) -> None:
    # rank r sends chunk value 10*r + q to rank q
    def chunk(sender: int, receiver: int) -> dict[str, object]:
        return tensor([10.0 * sender + receiver] * 2)

    dump = CommDump(tmp_path)
    for rank in range(3):
        sent = [chunk(rank, q) for q in range(3)]
        got = [chunk(q, rank) for q in range(3)]
        dump.add(
            rank, "Distributed.all_to_all.0.forward", record([[ZERO] * 3, sent], {}, [got, sent])
        )
        flat_sent = [10.0 * rank + q for q in range(3) for _ in range(2)]
        flat_got = [10.0 * q + rank for q in range(3) for _ in range(2)]
        dump.add(
            rank,
            "Distributed.all_to_all_single.0.forward",
            record(
                [tensor([0.0] * 6), tensor(flat_sent)], {}, [tensor(flat_got), tensor(flat_sent)]
            ),
        )
    built = dump.build()

    for rank in range(3):
        for name in ("Distributed.all_to_all.0.forward", "Distributed.all_to_all_single.0.forward"):
            assert len(built.peers(rank, name)) == 2
            _all_consistent(built, rank, name)


def test_barrier_is_linked_with_an_unknown_verdict(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    for rank in range(2):
        dump.add(rank, "Distributed.barrier.0.forward", record())
    built = dump.build()

    assert built.peers(0, "Distributed.barrier.0.forward") == {"1": "Distributed.barrier.0.forward"}
    assert built.node_flag(0, "Distributed.barrier.0.forward") == (
        "unknown",
        "barrier carries no data",
    )


def test_batch_isend_irecv_links_each_inner_op(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    ops = {
        0: [p2p_op("isend", 1, A), p2p_op("irecv", 1, B)],
        1: [p2p_op("irecv", 0, A), p2p_op("isend", 0, B)],
    }
    for rank, batch in ops.items():
        dump.add(rank, "Distributed.batch_isend_irecv.0.forward", record([batch], {}, [batch]))
    built = dump.build()

    name = "Distributed.batch_isend_irecv.0.forward"
    assert built.annotation(0, name) == [
        {"communications_type": "send", "nodes_info": {"1": ["Nan", name]}},
        {"communications_type": "receive", "nodes_info": {"1": ["Nan", name]}},
    ]
    assert built.annotation(1, name) == [
        {"communications_type": "receive", "nodes_info": {"0": ["Nan", name]}},
        {"communications_type": "send", "nodes_info": {"0": ["Nan", name]}},
    ]
    _all_consistent(built, 0, name)
    assert built.query("SELECT api, kind FROM gb_links WHERE rank = 0 ORDER BY op_index") == [
        ("isend", "send"),
        ("irecv", "receive"),
    ]


def test_overflow_check_shows_the_peer_overflow_level(tmp_path: Path) -> None:
    inf = tensor(stats=(float("inf"), 1.0, float("inf"), float("inf")))
    dump = CommDump(tmp_path)
    dump.add(0, "Distributed.send.0.forward", record([inf], {"dst": scalar(1)}, [inf, scalar(1)]))
    dump.add(1, "Distributed.recv.0.forward", record([None], {"src": scalar(0)}, [inf, scalar(0)]))
    built = dump.build(overflow_check=True)

    level = built.query(
        "SELECT overflow_level FROM tb_nodes WHERE rank = 0 AND node_name = 'Distributed.send.0.forward'"
    )[0][0]
    assert level is not None  # the inf makes the send overflow
    assert built.annotation(1, "Distributed.recv.0.forward")["nodes_info"]["0"][0] == level
    _all_consistent(built, 1, "Distributed.recv.0.forward")  # inf carried over faithfully
