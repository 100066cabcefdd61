"""convnet-ddp2 (2 ranks x 2 steps, gloo): our links against msprobe's own .vis.db."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixture_cases import BuildFn, reference_db

CASE = "convnet-ddp2"
Key = tuple[str, int, int, str]  # (data_source, step, rank, node_name)


def _annotations(path: Path) -> dict[Key, Any]:
    """Every distributed node's matched_distributed, parsed."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT data_source, step, rank, node_name, matched_distributed FROM tb_nodes"
            " WHERE is_distributed = 1"
        ).fetchall()
    return {(side, step, rank, name): json.loads(text) for side, step, rank, name, text in rows}


def _peers(annotation: Any) -> Iterator[tuple[str, str, int, str]]:
    """(communications_type, index text, peer rank, peer node) of a dict or list annotation."""
    for op in annotation if isinstance(annotation, list) else [annotation]:
        if op:
            for peer, (index, node) in op["nodes_info"].items():
                yield op["communications_type"], index, int(peer), node


@pytest.fixture(scope="module")
def ours(built: BuildFn) -> Path:
    return built(CASE)


def test_every_communication_node_is_linked_in_both_directions(ours: Path) -> None:
    annotations = _annotations(ours)
    assert len(annotations) == 152  # 19 Distributed.* nodes x 2 ranks x 2 steps x 2 sides
    opposite = {"send": "receive", "receive": "send", "send_receive": "send_receive"}
    for (side, step, rank, name), annotation in annotations.items():
        peers = list(_peers(annotation))
        assert peers, f"{side} step {step} rank {rank} {name} is not linked"
        for kind, _index, peer_rank, peer_node in peers:
            back = annotations[(side, step, peer_rank, peer_node)]
            assert (opposite[kind], rank, name) in {
                (peer_kind, r, n) for peer_kind, _i, r, n in _peers(back)
            }, f"{peer_node} on rank {peer_rank} does not link back to {name} on rank {rank}"


def test_at_least_as_many_linked_nodes_as_msprobe(ours: Path) -> None:
    query = "SELECT COUNT(*) FROM tb_nodes WHERE matched_distributed != '{}'"
    with sqlite3.connect(ours) as conn:
        (linked,) = conn.execute(query).fetchone()
    with sqlite3.connect(reference_db(CASE)) as conn:
        (reference,) = conn.execute(query).fetchone()
    assert reference == 16
    assert linked >= reference
    assert linked == 152  # broadcast, all_reduce and all_gather too (no group in gloo dumps)


def test_send_recv_annotations_are_msprobe_s_byte_for_byte(ours: Path) -> None:
    query = (
        "SELECT data_source, step, rank, node_name, matched_distributed FROM tb_nodes"
        " WHERE matched_distributed != '{}'"
    )
    with sqlite3.connect(reference_db(CASE)) as conn:
        reference = {tuple(row[:4]): row[4] for row in conn.execute(query)}
    with sqlite3.connect(ours) as conn:
        mine = {tuple(row[:4]): row[4] for row in conn.execute(query)}
    assert reference
    for key, text in reference.items():
        assert mine.get(key) == text, key


def test_real_gloo_traffic_is_consistent(ours: Path) -> None:
    with sqlite3.connect(ours) as conn:
        verdicts = dict(
            conn.execute("SELECT verdict, COUNT(*) FROM gb_peer_links GROUP BY verdict")
        )
        flags = dict(conn.execute("SELECT verdict, COUNT(*) FROM gb_comm_nodes GROUP BY verdict"))
        edges = conn.execute(
            "SELECT data_source, step, src_rank, dst_rank, ops, status FROM gb_topology"
            " ORDER BY 1, 2, 3, 4"
        ).fetchall()
        meta = json.loads(
            conn.execute("SELECT value FROM gb_meta WHERE key = 'links'").fetchone()[0]
        )
    assert verdicts == {"consistent": 152}
    assert flags == {"consistent": 152}
    # rank 0 -> 1: broadcast + send + all_gather + 15 all_reduce; 1 -> 0: isend + the mutual ones
    assert edges == [
        (side, step, src, dst, 18 if src == 0 else 17, "ok")
        for side in ("Bench", "NPU")
        for step in (0, 1)
        for src, dst in ((0, 1), (1, 0))
    ]
    assert meta["linked_nodes"] == 152 and meta["unlinked"] == 0
    assert meta["links_by_api"] == {
        "all_gather": 4,
        "all_reduce": 60,
        "broadcast": 4,
        "isend": 4,
        "send": 4,
    }
