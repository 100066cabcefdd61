"""The layout model on real parallel dumps (tests/parallel/megatron_gpt.py under torchrun,
dumped by msprobe's dumper): the groups found in each layout's records, and the replicas'
main ranks against the graphs of msprobe's own merged file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from parallel_dumps import DumpFn, ParallelDump, ReferenceFn

from graphboard.dump.layout import discover
from graphboard.graph.builder import read_records
from graphboard.merge.flags import ParallelFlags
from graphboard.merge.layout import Group, found_replicas


def _replicas_of(made: ParallelDump, warnings: list[str]) -> list[tuple[int, tuple[Group, ...]]]:
    layout = discover(made.root)
    records = {item.rank: read_records(item) for item in layout.ranks}
    params = {rank: read.params for rank, read in records.items()}
    batches = {rank: read.batch_p2p for rank, read in records.items()}
    flags = ParallelFlags(made.layout.ranks, made.layout.tp, made.layout.pp)
    return [
        (replica.main_rank, replica.stages)
        for replica in found_replicas(flags, params, batches, "target", warnings)
    ]


def _reference_ranks(path: Path) -> list[int]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return [
            rank for (rank,) in conn.execute("SELECT DISTINCT rank FROM tb_nodes ORDER BY rank")
        ]


EXPECTED = {
    "tp2": [(0, ((0,), (1,)))],
    "sp": [(0, ((0,), (1,)))],
    "pp2": [(0, ((0, 1),))],
    "tp2pp2": [(0, ((0, 2), (1, 3)))],
    "dp2tp2": [(0, ((0,), (1,))), (2, ((2,), (3,)))],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_groups_found_in_the_dumps_give_msprobes_graphs(
    name: str, parallel_dump: DumpFn, parallel_reference: ReferenceFn
) -> None:
    warnings: list[str] = []
    replicas = _replicas_of(parallel_dump(name, "mix"), warnings)
    assert replicas == EXPECTED[name]
    assert warnings == []
    assert _reference_ranks(parallel_reference(name, "mix")) == [main for main, _ in replicas]


def test_an_l0_dump_has_no_collectives_and_takes_megatrons_groups(parallel_dump: DumpFn) -> None:
    made = parallel_dump("tp2pp2", "L0")
    dump = json.loads((made.root / "step0" / "rank0" / "dump.json").read_text())
    assert not [name for name in dump["data"] if name.startswith("Distributed.")]
    warnings: list[str] = []
    assert _replicas_of(made, warnings) == EXPECTED["tp2pp2"]
    assert warnings == []


def test_the_dumps_are_megatron_shaped(parallel_dump: DumpFn) -> None:
    """What the merge relies on, present in the fixtures as Megatron writes it: module names,
    the Row/Column matmuls followed by their reduce, sends with dst, reduce_scatter in SP."""
    tp2 = json.loads((parallel_dump("tp2").root / "step0" / "rank1" / "dump.json").read_text())
    names = list(tp2["data"])
    row = "Module.decoder.layers.1.mlp.linear_fc2.RowParallelLinear.forward.0"
    assert row in names
    assert (
        "Module.decoder.layers.0.self_attention.linear_qkv.ColumnParallelLinear.backward.0" in names
    )
    matmul = names.index(row) - 3
    assert names[matmul].startswith("Torch.matmul.") and names[matmul + 1].startswith(
        "Distributed.all_reduce."
    )
    reduce_input = tp2["data"][names[matmul + 1]]["input_args"][0]
    assert reduce_input["Max"] == tp2["data"][names[matmul]]["output"][0]["Max"]
    sp = json.loads((parallel_dump("sp").root / "step0" / "rank0" / "dump.json").read_text())
    assert any(name.startswith("Distributed.reduce_scatter_tensor.") for name in sp["data"])
    assert any(name.startswith("Distributed.all_gather_into_tensor.") for name in sp["data"])
    pp2 = json.loads((parallel_dump("pp2").root / "step0" / "rank0" / "dump.json").read_text())
    send = next(
        record for name, record in pp2["data"].items() if name.startswith("Distributed.send.")
    )
    assert send["input_kwargs"]["dst"]["value"] == 1


def test_msprobes_merged_files_merge_tp_and_renumber_pp(parallel_reference: ReferenceFn) -> None:
    with sqlite3.connect(parallel_reference("tp2")) as conn:
        merged = conn.execute(
            "SELECT COUNT(*) FROM tb_nodes WHERE parallel_merge_info LIKE '%merged from rank [0, 1]%'"
        ).fetchone()[0]
    assert merged > 0
    with sqlite3.connect(parallel_reference("pp2")) as conn:
        layers = sorted(
            name
            for (name,) in conn.execute(
                "SELECT node_name FROM tb_nodes WHERE node_name LIKE 'Module.decoder.layers.%.TransformerLayer.forward.0'"
            )
        )
    assert layers == [f"Module.decoder.layers.{n}.TransformerLayer.forward.0" for n in range(4)]
