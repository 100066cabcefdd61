"""Tiny hand-made msprobe dumps of communication ops, built through the real pipeline.

``CommDump`` collects records per rank, writes ``rank<N>/{construct,dump,stack}.json`` under a
dump root, runs ``run_build`` on it and opens the finished .vis.db. Record helpers write the
leaves as msprobe does (tensors with Max/Min/Mean/Norm, ``{"type": "int", "value": ...}``,
process groups with ``group_ranks``/``group_id``, P2POp leaves for batch_isend_irecv).
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphboard.pipeline import BuildOptions, BuildResult, run_build

Record = dict[str, Any]


def tensor(
    values: list[float] | None = None,
    *,
    stats: tuple[float, float, float, float] | None = None,
    shape: list[int] | None = None,
    dtype: str = "torch.float32",
) -> dict[str, Any]:
    """A tensor leaf; ``values`` gives exact statistics of a 1-D tensor."""
    if values is not None:
        stats = (
            max(values),
            min(values),
            sum(values) / len(values),
            math.sqrt(sum(v * v for v in values)),
        )
        shape = shape or [len(values)]
    assert stats is not None
    high, low, mean, norm = stats
    return {
        "type": "torch.Tensor",
        "dtype": dtype,
        "shape": shape or [4],
        "Max": high,
        "Min": low,
        "Mean": mean,
        "Norm": norm,
        "requires_grad": False,
    }


def scalar(value: Any) -> dict[str, Any]:
    return {"type": type(value).__name__, "value": value}


def group(ranks: list[int], group_id: str) -> dict[str, Any]:
    return {"type": "torch.ProcessGroup", "group_ranks": ranks, "group_id": group_id}


def reduce_op(name: str = "SUM") -> dict[str, Any]:
    return {"type": "torch.distributed.ReduceOp", "value": f"RedOpType.{name}"}


def p2p_op(op: str, peer: int, data: dict[str, Any], group_id: str = "world") -> dict[str, Any]:
    return {
        "class_type": "torch.distributed.P2POp",
        "op": op,
        "peer": peer,
        "tag": 0,
        "group_id": group_id,
        "tensor": data,
    }


def record(
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    output: list[Any] | None = None,
) -> Record:
    return {"input_args": args or [], "input_kwargs": kwargs or {}, "output": output or []}


@dataclass
class CommDump:
    """Records per rank, in call order; ``build`` turns them into a .vis.db."""

    root: Path
    ranks: dict[int, dict[str, Record]] = field(default_factory=dict)

    def add(self, rank: int, name: str, rec: Record) -> None:
        self.ranks.setdefault(rank, {})[name] = rec

    def write(self) -> Path:
        dump_root = self.root / "dump"
        for rank, records in self.ranks.items():
            folder = dump_root / f"rank{rank}"
            folder.mkdir(parents=True, exist_ok=True)
            header = {"task": "statistics", "level": "L1", "framework": "pytorch"}
            dump = {**header, "dump_data_dir": None, "data": records}
            (folder / "dump.json").write_text(json.dumps(dump))
            (folder / "construct.json").write_text(json.dumps(dict.fromkeys(records)))
            (folder / "stack.json").write_text("{}")
        return dump_root

    def build(self, **flags: Any) -> Built:
        result = run_build(
            BuildOptions(target=self.write(), output_dir=self.root / "out", workers=1, **flags)
        )
        return Built(result)


@dataclass
class Built:
    result: BuildResult

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.result.path) as conn:
            return conn.execute(sql, params).fetchall()

    def annotation(self, rank: int, name: str, side: str = "NPU", step: int = 0) -> Any:
        rows = self.query(
            "SELECT matched_distributed FROM tb_nodes"
            " WHERE data_source = ? AND step = ? AND rank = ? AND node_name = ?",
            side,
            step,
            rank,
            name,
        )
        assert rows, f"no node {name} on rank {rank}"
        return json.loads(rows[0][0])

    def peers(self, rank: int, name: str) -> dict[str, str]:
        """{peer rank: peer node} of a node's (non-batch) annotation."""
        return {peer: info[1] for peer, info in self.annotation(rank, name)["nodes_info"].items()}

    def node_flag(self, rank: int, name: str) -> tuple[str, str | None]:
        rows = self.query(
            "SELECT verdict, reason FROM gb_comm_nodes WHERE rank = ? AND node_name = ?",
            rank,
            name,
        )
        assert len(rows) == 1, rows
        return rows[0][0], rows[0][1]

    def links(self, rank: int, name: str) -> list[tuple[Any, ...]]:
        """(peer_rank, peer_node, kind, verdict, reason) rows of a node, by peer (the view)."""
        return self.query(
            "SELECT peer_rank, peer_node, kind, verdict, reason FROM gb_peer_links"
            " WHERE rank = ? AND node_name = ? ORDER BY op_index, peer_rank",
            rank,
            name,
        )

    def meta_links(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(
            self.query("SELECT value FROM gb_meta WHERE key = 'links'")[0][0]
        )
        return value
