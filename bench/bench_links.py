"""Benchmark cross-rank linking: 1,024 ranks x 200 communication ops, and how it scales.

Builds synthetic ``CommNode``s in memory, shaped like a TP=8 / PP / DP job (per rank: 40 sends
and 40 receives to the next and previous pipeline stage, 60 all_reduce, 20 all_gather and 20
broadcast in its tensor-parallel group of 8, 20 batch_isend_irecv with its data-parallel
peer), writes their tb_nodes rows into a temporary .vis.db, and times ``link_ranks`` alone:
pairing, the data checks, the topology and every SQL write.

    .venv/bin/python bench/bench_links.py [--ranks 128 1024] [--repeat 3] [--record]

Prints wall and CPU time (CPU time is what to compare on a shared machine; with --repeat, the
run with the least CPU time), communication ops per CPU second, the wall seconds of each
stage, the rows written per table, and the per-op CPU time of the largest run over the
smallest: linear linking keeps that ratio near 1.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from graphboard.distributed import CommNode, LinkSummary, link_ranks
from graphboard.dump.records import Param, Role
from graphboard.graph.model import TARGET_SIDE
from graphboard.store import writer
from harness import recorded

TP = 8  # tensor-parallel group size: collectives are linked within it
OPS_PER_RANK = 200


def _tensor(key: str, role: Role, high: float, low: float, mean: float, norm: float) -> Param:
    return Param(
        key, role, "torch.Tensor", "torch.float32", (1024,), high, low, mean, norm, is_tensor=True
    )


def _value(key: str, value: int) -> Param:
    return Param(key, Role.INPUT, "int", "<class 'int'>", (), value=value)


def _group(members: list[int]) -> Param:
    extra = {"group_ranks": members, "group_id": f"tp{members[0]}"}
    return Param("input.group", Role.INPUT, "torch.ProcessGroup", extra=extra)


# Shared parameter objects: the statistics are consistent (an all_reduce SUM of 8 equal inputs).
CONTRIBUTION = _tensor("input.0", Role.INPUT, 1.0, -1.0, 0.1, 2.0)
REDUCED = _tensor("output.0", Role.OUTPUT, 8.0, -8.0, 0.8, 16.0)
PAYLOAD_IN = _tensor("input.0", Role.INPUT, 3.0, -3.0, 0.5, 9.0)
PAYLOAD_OUT = _tensor("output.0", Role.OUTPUT, 3.0, -3.0, 0.5, 9.0)
GATHER_IN = _tensor("input.1", Role.INPUT, 3.0, -3.0, 0.5, 9.0)
GATHERED = [_tensor(f"output.0.{slot}", Role.OUTPUT, 3.0, -3.0, 0.5, 9.0) for slot in range(TP)]


def _p2p_op(index: int, op: str, peer: int) -> Param:
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [1024]}
    stats = {"Max": 3.0, "Min": -3.0, "Mean": 0.5, "Norm": 9.0}
    extra = {"op": op, "peer": peer, "group_id": "world", "tensor": leaf | stats}
    return Param(f"output.0.{index}", Role.OUTPUT, "torch.distributed.P2POp", extra=extra)


def rank_nodes(rank: int, ranks: int) -> list[CommNode]:
    """The 200 communication nodes of one rank, in call order."""
    tp_first = rank - rank % TP
    group = _group(list(range(tp_first, tp_first + TP)))
    next_stage, previous_stage = (rank + TP) % ranks, (rank - TP) % ranks
    dp_peer = (rank + ranks // 2) % ranks
    nodes: list[CommNode] = []
    calls: dict[str, int] = {}

    def add(api: str, params: list[Param], batch: list[dict[str, object]] | None = None) -> None:
        index = calls.get(api, 0)
        calls[api] = index + 1
        name = f"Distributed.{api}.{index}.forward"
        nodes.append(CommNode(TARGET_SIDE, 0, rank, name, len(nodes), params, 0.0, None, batch))

    for _round in range(20):
        for _ in range(3):
            add("all_reduce", [CONTRIBUTION, group, REDUCED])
        add("all_gather", [GATHER_IN, group, *GATHERED])
        add("broadcast", [PAYLOAD_IN, _value("input.src", tp_first), group, PAYLOAD_OUT])
        for _ in range(2):
            add("send", [PAYLOAD_IN, _value("input.dst", next_stage), PAYLOAD_OUT])
            add("recv", [_value("input.src", previous_stage), PAYLOAD_OUT])
        ops = [{"op": "isend", "peer": dp_peer}, {"op": "irecv", "peer": dp_peer}]
        add("batch_isend_irecv", [_p2p_op(0, "isend", dp_peer), _p2p_op(1, "irecv", dp_peer)], ops)
    assert len(nodes) == OPS_PER_RANK
    return nodes


def _database(path: Path, nodes: list[CommNode]) -> sqlite3.Connection:
    """A .vis.db, opened as the pipeline opens it, holding the tb_nodes rows linking updates."""
    conn = writer.open_new_db(path)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO tb_nodes (id, graph_id, node_order, node_name, node_type, micro_step_id,"
        " matched_distributed, modified, data_source, step, rank, is_distributed)"
        " VALUES (?, ?, ?, ?, '1', 0, '{}', 0, ?, ?, ?, 1)",
        (
            (
                f"{node.side}_{node.step}_{node.rank}_{node.name}",
                f"{node.side}_{node.step}_{node.rank}",
                node.order,
                node.name,
                node.side,
                node.step,
                node.rank,
            )
            for node in nodes
        ),
    )
    conn.execute("COMMIT")
    return conn


def _rows(conn: sqlite3.Connection) -> dict[str, int]:
    tables = ("gb_links", "gb_comm_calls", "gb_call_pairs", "gb_comm_nodes", "gb_topology")
    return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in tables}


def run(ranks: int, folder: Path, repeat: int) -> float:
    """CPU seconds per communication op for one size (the best of ``repeat`` runs)."""
    nodes = [node for rank in range(ranks) for node in rank_nodes(rank, ranks)]
    best: tuple[float, float, LinkSummary, dict[str, int]] | None = None
    for attempt in range(repeat):
        conn = _database(folder / f"links_{ranks}_{attempt}.vis.db", nodes)
        started, started_cpu = time.perf_counter(), time.process_time()
        summary = link_ranks(conn, nodes, overflow_check=False)
        seconds, cpu = time.perf_counter() - started, time.process_time() - started_cpu
        rows = _rows(conn)
        conn.close()
        if best is None or cpu < best[1]:
            best = (seconds, cpu, summary, rows)
    assert best is not None
    seconds, cpu, summary, rows = best
    counts = summary.counts
    annotated = counts["linked_nodes"]
    stages = ", ".join(
        f"{name} {value:.2f}" for name, value in counts["seconds"].items() if name != "total"
    )
    print(
        f"{ranks:>5} ranks x {OPS_PER_RANK} ops = {len(nodes):>7,} comm nodes: "
        f"wall {seconds:6.2f} s, CPU {cpu:6.2f} s, {len(nodes) / cpu:>7,.0f} ops per CPU second"
        f"\n      stages (wall s): {stages}"
        f"\n      {counts['links']:,} links, {annotated:,} annotated nodes, "
        f"verdicts {counts['links_by_verdict']}, {len(summary.warnings)} warning(s)"
        f"\n      rows: " + ", ".join(f"{table} {count:,}" for table, count in rows.items())
    )
    assert annotated == len(nodes), "every synthetic op has its peers in the run"
    assert counts["links_by_verdict"] == {"consistent": counts["links"]}
    return cpu / len(nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[128, 1024])
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the least CPU")
    parser.add_argument("--record", action="store_true", help="also write bench/results/links.md")
    args = parser.parse_args()
    if any(ranks % (2 * TP) for ranks in args.ranks):
        parser.error(f"--ranks must be multiples of {2 * TP}")
    with recorded("links", args.record):
        link_and_report(args.ranks, args.repeat)


def link_and_report(sizes: list[int], repeat: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        per_op = {ranks: run(ranks, Path(folder), repeat) for ranks in sorted(sizes)}
    smallest, largest = min(per_op), max(per_op)
    if smallest != largest:
        print(
            f"scaling: CPU time per op at {largest} ranks / at {smallest} ranks = "
            f"{per_op[largest] / per_op[smallest]:.2f} (1.00 = linear)"
        )


if __name__ == "__main__":
    main()
