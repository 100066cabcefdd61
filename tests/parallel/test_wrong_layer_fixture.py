"""The TP2 target with one wrong layer against the TP1 golden, as msprobe's merged compare sees
it: the wrong layer's MLP is the first module in error, nothing before it is (the case a
merged graphboard compare must show first)."""

from __future__ import annotations

import sqlite3

from parallel_dumps import LAYOUTS, CompareFn

ERROR = 1.0  # msprobe's precision_index of an error


def test_msprobes_merged_compare_finds_the_wrong_layer_first(
    parallel_compare_reference: CompareFn,
) -> None:
    assert LAYOUTS["tp2-wrong"].wrong_layer == 1
    path = parallel_compare_reference("tp2-wrong", "tp1", "mix")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        errors = [
            name
            for name, index in conn.execute(
                "SELECT node_name, precision_index FROM tb_nodes WHERE data_source = 'NPU'"
                " ORDER BY node_order"
            )
            if index == ERROR
        ]
    assert errors, "msprobe found no error"
    assert errors[0] == "Module.decoder.layers.1.mlp.MLP.forward.0", errors[:5]
