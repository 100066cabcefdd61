"""TP x PP x VPP (msprobe merges each pipeline chain's chunks, then across TP) against msprobe's
file of the same real dump. msprobe leaves the Row/Column-parallel rule out for the layers moved
in from the other chunks: their matmuls get the plain TP merge of partial sums (max of the
ranks' maxima), numbers no rank computed; graphboard takes their output from the reduce that
follows, as for chunk 0's (docs/differences.md). Every other cell is msprobe's."""

from __future__ import annotations

from pathlib import Path

from parallel_dumps import DumpFn, ReferenceFn
from test_merged_build_reference import COLUMNS, _build, _cells

MOVED_LAYERS = ("decoder.layers.2.", "decoder.layers.3.")  # chunk 1's, on stage 0 and stage 1


def test_tp_pp_vpp_is_msprobes_but_for_the_moved_layers_matmuls(
    parallel_dump: DumpFn, parallel_reference: ReferenceFn, tmp_path: Path
) -> None:
    made = parallel_dump("tp2pp2vpp2", "mix")
    ours = _cells(_build(made.root, "tp2pp2vpp2", tmp_path, False))
    theirs = _cells(parallel_reference("tp2pp2vpp2", "mix"))
    assert ours.keys() == theirs.keys()
    differing = {
        (key, column)
        for key in ours
        for column in COLUMNS
        if ours[key][column] != theirs[key][column]
    }
    nodes = {key for key, _ in differing}
    assert differing == {
        (key, column) for key in nodes for column in ("parallel_merge_info", "output_data")
    }
    assert len(nodes) == 8  # two Row forward and two Column backward matmuls a moved layer
    for rank, name in nodes:
        cell = ours[rank, name]
        assert ".matmul" in name and any(layer in cell["up_node"] for layer in MOVED_LAYERS)
        (note,) = [line for line in cell["parallel_merge_info"] if "output of this data" in line]
        reduce_name = note.rsplit(" ", 1)[-1].removesuffix(".output.0")
        reduced = ours[rank, reduce_name]["output_data"][f"{reduce_name}.output.0"]
        output = cell["output_data"][f"{name}.output.0"]
        assert [output[stat] for stat in ("Max", "Min", "Mean", "Norm")] == [
            reduced[stat] for stat in ("Max", "Min", "Mean", "Norm")
        ]
