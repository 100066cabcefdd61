"""What was sent is checked against what was received; a disagreement flags the node."""

from __future__ import annotations

from pathlib import Path

from comm_dumps import CommDump, record, reduce_op, scalar, tensor

A = tensor([1.0, 2.0, 3.0, 4.0])
B = tensor([4.0, 3.0, 2.0, 1.0])
TOTAL = tensor([5.0, 5.0, 5.0, 5.0])
SEND = "Distributed.send.0.forward"
RECV = "Distributed.recv.0.forward"
ALL_REDUCE = "Distributed.all_reduce.0.forward"


def _send_recv(tmp_path: Path, received: dict[str, object] | None) -> CommDump:
    dump = CommDump(tmp_path)
    dump.add(0, SEND, record([A], {"dst": scalar(1)}, [A, scalar(1)]))
    dump.add(1, RECV, record([None], {"src": scalar(0)}, [received, scalar(0)]))
    return dump


def test_received_data_differing_from_sent_is_a_flagged_mismatch(tmp_path: Path) -> None:
    corrupted = tensor([1.0, 2.0, 3.0, 40.0])
    built = _send_recv(tmp_path, corrupted).build()

    ((peer, peer_node, kind, verdict, reason),) = built.links(1, RECV)
    assert (peer, peer_node, kind, verdict) == (0, SEND, "receive", "mismatch")
    assert reason is not None and "Max 40" in reason and "expected 4" in reason
    for rank, name in [(0, SEND), (1, RECV)]:
        flag, why = built.node_flag(rank, name)
        assert flag == "mismatch"
        assert why is not None and "Max" in why
    # the link itself is still made: msprobe's annotation does not depend on the data
    assert built.peers(1, RECV) == {"0": SEND}
    assert built.query("SELECT src_rank, dst_rank, ops, mismatches, status FROM gb_topology") == [
        (0, 1, 1, 1, "mismatch")
    ]
    counts = built.meta_links()
    assert counts["links_by_verdict"] == {"mismatch": 1}
    assert counts["topology"]["edges_with_mismatch"] == 1


def test_dtype_or_shape_change_is_a_mismatch(tmp_path: Path) -> None:
    half = tensor([1.0, 2.0, 3.0, 4.0], dtype="torch.float16")
    built = _send_recv(tmp_path, half).build()
    flag, why = built.node_flag(1, RECV)
    assert flag == "mismatch" and why is not None and "dtype" in why

    longer = tensor([1.0, 2.0, 3.0, 4.0, 0.0])
    built = _send_recv(tmp_path / "shape", longer).build()
    flag, why = built.node_flag(1, RECV)
    assert flag == "mismatch" and why is not None and "shape" in why


def test_tiny_float_noise_is_tolerated(tmp_path: Path) -> None:
    noisy = dict(A)
    noisy["Mean"] = float(A["Mean"]) * (1 + 1e-7)
    built = _send_recv(tmp_path, noisy).build()
    assert built.node_flag(1, RECV)[0] == "consistent"


def test_missing_statistics_give_unknown_not_mismatch(tmp_path: Path) -> None:
    built = _send_recv(tmp_path, None).build()
    ((_peer, peer_node, _kind, verdict, reason),) = built.links(1, RECV)
    assert peer_node == SEND
    assert verdict == "unknown" and reason is not None and "no statistics" in reason
    assert built.node_flag(1, RECV)[0] == "unknown"


def _all_reduce(
    tmp_path: Path, inputs: list[dict[str, object]], outputs: list[dict[str, object]]
) -> CommDump:
    dump = CommDump(tmp_path)
    for rank, (mine, result) in enumerate(zip(inputs, outputs, strict=True)):
        dump.add(rank, ALL_REDUCE, record([mine], {"op": reduce_op()}, [result, reduce_op()]))
    return dump


def test_all_reduce_result_differing_on_one_rank_flags_its_links(tmp_path: Path) -> None:
    wrong = tensor([5.0, 5.0, 5.0, 6.0])
    built = _all_reduce(
        tmp_path, [A, B, TOTAL], [tensor([10.0] * 4), tensor([10.0] * 4), wrong]
    ).build()

    verdicts = {
        (rank, peer): verdict
        for rank, peer, verdict in built.query("SELECT rank, peer_rank, verdict FROM gb_peer_links")
    }
    assert verdicts[(0, 1)] == verdicts[(1, 0)] == "consistent"
    assert verdicts[(0, 2)] == verdicts[(2, 0)] == verdicts[(1, 2)] == "mismatch"
    assert built.node_flag(2, ALL_REDUCE)[0] == "mismatch"
    statuses = dict(
        ((src, dst), status)
        for src, dst, status in built.query("SELECT src_rank, dst_rank, status FROM gb_topology")
    )
    assert statuses[(0, 1)] == "ok" and statuses[(2, 0)] == "mismatch"


def test_all_reduce_that_is_not_the_sum_of_its_inputs_is_a_mismatch(tmp_path: Path) -> None:
    not_the_sum = tensor([6.0, 6.0, 6.0, 6.0])
    built = _all_reduce(tmp_path, [A, B], [not_the_sum, not_the_sum]).build()

    flag, why = built.node_flag(0, ALL_REDUCE)
    assert flag == "mismatch"
    assert why is not None and "SUM Mean 6" in why and "expected 5" in why


def test_broadcast_member_that_did_not_get_the_root_data_is_flagged(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    dump.add(0, "Distributed.broadcast.0.forward", record([A], {"src": scalar(0)}, [A, scalar(0)]))
    dump.add(1, "Distributed.broadcast.0.forward", record([B], {"src": scalar(0)}, [A, scalar(0)]))
    # B holds A's values permuted: same statistics, so the check must see different values
    stale = tensor([0.0, 2.0, 3.0, 4.0])
    dump.add(
        2,
        "Distributed.broadcast.0.forward",
        record([stale], {"src": scalar(0)}, [stale, scalar(0)]),
    )
    built = dump.build()

    assert built.node_flag(1, "Distributed.broadcast.0.forward")[0] == "consistent"
    assert built.node_flag(2, "Distributed.broadcast.0.forward")[0] == "mismatch"
    flag, why = built.node_flag(0, "Distributed.broadcast.0.forward")
    assert flag == "mismatch" and why is not None and why.startswith("with rank 2")
