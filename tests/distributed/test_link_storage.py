"""Collectives are stored once per group call; gb_peer_links still lists every (node, peer)."""

from __future__ import annotations

import json
from pathlib import Path

from comm_dumps import Built, CommDump, group, record, reduce_op, scalar, tensor

A = tensor([1.0, 2.0, 3.0, 4.0])
ALL_REDUCE = "Distributed.all_reduce.0.forward"


def _all_reduce(tmp_path: Path, ranks: int, wrong: int | None = None) -> Built:
    total = tensor([float(ranks * value) for value in (1, 2, 3, 4)])
    dump = CommDump(tmp_path)
    for rank in range(ranks):
        result = tensor([0.0, 0.0, 0.0, 0.0]) if rank == wrong else total
        dump.add(rank, ALL_REDUCE, record([A], {"op": reduce_op()}, [result, reduce_op()]))
    return dump.build()


def _count(built: Built, table: str) -> int:
    return int(built.query(f"SELECT COUNT(*) FROM {table}")[0][0])


def test_a_healthy_many_to_many_call_is_one_row_not_one_per_pair(tmp_path: Path) -> None:
    built = _all_reduce(tmp_path, 6)

    ((call_id, family, members, present, absent, verdict, pair_verdict),) = built.query(
        "SELECT id, family, members, present, absent, verdict, pair_verdict FROM gb_comm_calls"
    )
    assert (family, json.loads(members), present, json.loads(absent)) == (
        "many_to_many",
        list(range(6)),
        6,
        {},
    )
    assert verdict == pair_verdict == "consistent"
    assert _count(built, "gb_links") == 0
    assert _count(built, "gb_call_pairs") == 0
    assert built.query("SELECT DISTINCT call_id, linked_peers, verdict FROM gb_comm_nodes") == [
        (call_id, 5, "consistent")
    ]
    # the view expands the call: every node lists its 5 peers, as gb_links did
    assert _count(built, "gb_peer_links") == 30
    assert [row[0] for row in built.links(3, ALL_REDUCE)] == [0, 1, 2, 4, 5]
    assert set(built.peers(3, ALL_REDUCE)) == {"0", "1", "2", "4", "5"}


def test_only_the_pairs_of_a_disagreeing_member_are_stored(tmp_path: Path) -> None:
    built = _all_reduce(tmp_path, 5, wrong=2)

    ((verdict, pair_verdict),) = built.query("SELECT verdict, pair_verdict FROM gb_comm_calls")
    assert (verdict, pair_verdict) == ("mismatch", "consistent")
    pairs = built.query("SELECT rank_a, rank_b, verdict FROM gb_call_pairs ORDER BY 1, 2")
    assert pairs == [(0, 2, "mismatch"), (1, 2, "mismatch"), (2, 3, "mismatch"), (2, 4, "mismatch")]
    verdicts = {row[0]: row[3] for row in built.links(0, ALL_REDUCE)}
    assert verdicts == {1: "consistent", 2: "mismatch", 3: "consistent", 4: "consistent"}
    flag, reason = built.node_flag(0, ALL_REDUCE)
    assert flag == "mismatch" and reason is not None and reason.startswith("with rank 2 (")


def test_rooted_calls_keep_root_member_rows_and_point_at_their_call(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    for rank in range(3):
        dump.add(
            rank,
            "Distributed.broadcast.0.forward",
            record([A], {"src": scalar(1)}, [A, scalar(1)]),
        )
    built = dump.build()

    ((call_id, family, root),) = built.query("SELECT id, family, root_rank FROM gb_comm_calls")
    assert (family, root) == ("one_to_many", 1)
    assert built.query("SELECT absent FROM gb_comm_calls") == [("{}",)]
    rows = built.query("SELECT rank, peer_rank, kind, call_id FROM gb_links ORDER BY rank")
    assert rows == [
        (0, 1, "receive", call_id),
        (1, 0, "send", call_id),
        (1, 2, "send", call_id),
        (2, 1, "receive", call_id),
    ]


def test_a_member_missing_from_the_dump_is_recorded_once_per_call(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    pg = group([0, 1, 2, 3], "tp0")
    for rank in range(2):
        dump.add(rank, ALL_REDUCE, record([A], {"group": pg}, [tensor([2.0, 4.0, 6.0, 8.0]), pg]))
    built = dump.build()

    ((present, absent),) = built.query("SELECT present, absent FROM gb_comm_calls")
    assert present == 2
    assert json.loads(absent) == {
        "2": "rank 2 is not in the dump",
        "3": "rank 3 is not in the dump",
    }
    assert built.query("SELECT linked_peers, missing_peers FROM gb_comm_nodes") == [(1, 2), (1, 2)]
    assert built.links(1, ALL_REDUCE)[1:] == [
        (2, None, "send_receive", "unknown", "rank 2 is not in the dump"),
        (3, None, "send_receive", "unknown", "rank 3 is not in the dump"),
    ]


def test_a_node_s_peer_links_are_read_through_indexes(tmp_path: Path) -> None:
    built = _all_reduce(tmp_path, 4)
    plan = built.query(
        "EXPLAIN QUERY PLAN SELECT kind, peer_rank, peer_node, verdict, reason FROM gb_peer_links"
        " WHERE data_source = ? AND step = ? AND rank = ? AND node_name = ? ORDER BY op_index, id",
        "NPU",
        0,
        1,
        ALL_REDUCE,
    )
    details = [str(row[3]) for row in plan]
    scans = [detail for detail in details if detail.startswith("SCAN")]
    # json_each over one call's absent members, and the view's own rows: no table is scanned
    assert all("absent" in scan or "gb_peer_links" in scan for scan in scans), details


def test_group_order_is_kept_and_pairs_are_stored_by_rank(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    pg = group([2, 0, 1], "tp")
    total = tensor([3.0, 6.0, 9.0, 12.0])
    for rank in range(3):
        result = tensor([0.0, 0.0, 0.0, 0.0]) if rank == 0 else total
        dump.add(rank, ALL_REDUCE, record([A], {"group": pg}, [result, pg]))
    built = dump.build()

    assert json.loads(built.query("SELECT members FROM gb_comm_calls")[0][0]) == [2, 0, 1]
    assert built.query("SELECT rank_a, rank_b FROM gb_call_pairs ORDER BY 1, 2") == [(0, 1), (0, 2)]
    assert {row[0]: row[3] for row in built.links(2, ALL_REDUCE)} == {
        0: "mismatch",
        1: "consistent",
    }
    # msprobe's nodes_info lists the peers in group order, as every member's own text does
    assert list(built.annotation(1, ALL_REDUCE)["nodes_info"]) == ["2", "0"]
    assert list(built.annotation(2, ALL_REDUCE)["nodes_info"]) == ["0", "1"]


def test_a_world_group_is_a_block_per_call_and_a_clique_in_the_topology(tmp_path: Path) -> None:
    """32 ranks, 3 all_reduce without a group (as gloo dumps them); rank 31 misses the third."""
    dump = CommDump(tmp_path)
    for rank in range(32):
        for call in range(3 if rank < 31 else 2):
            members = 32 if call < 2 else 31
            total = tensor([members * value for value in (1.0, 2.0, 3.0, 4.0)])
            dump.add(
                rank,
                f"Distributed.all_reduce.{call}.forward",
                record([A], {"op": reduce_op()}, [total, reduce_op()]),
            )
    built = dump.build()

    assert _count(built, "gb_comm_calls") == 3 and _count(built, "gb_links") == 0
    edges = built.query(
        "SELECT ops, unlinked, status, COUNT(*) FROM gb_topology GROUP BY 1, 2, 3 ORDER BY 4"
    )
    # 31 x 30 pairs saw three linked calls; the 2 x 31 with rank 31, two and one unlinked
    assert edges == [(3, 1, "unlinked", 62), (3, 0, "ok", 930)]
    assert built.query("SELECT DISTINCT peers, component FROM gb_topology_ranks") == [(31, 0)]
    meta = built.meta_links()
    assert meta["links"] == 2 * (32 * 31 // 2) + 31 * 30 // 2
    assert meta["unlinked"] == 31 and meta["topology"]["edges"] == 32 * 31
