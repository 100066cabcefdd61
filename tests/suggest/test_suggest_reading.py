"""What the proposer reads in bulk is what the reader gives node by node: the parameters of
every node of a 48-block compare (gb_params rows of 256 nodes each, read for thousands of
nodes at once) and each side's tree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from graphboard.store.reader import GraphKey, node_data, open_vis_db
from graphboard.suggest.sides import load_side
from renamed_dumps import RenamedCompare


def test_bulk_parameters_are_the_nodes_own(
    renamed: Callable[[int], RenamedCompare], cache_dir: Path
) -> None:
    with open_vis_db(renamed(48).renamed, cache_dir) as db:
        for side in ("NPU", "Bench"):
            key = GraphKey(side, 0, 0)
            loaded = load_side(db, key)
            grey = [o for o in range(len(loaded)) if loaded.matched[o] != 1]
            assert len(grey) > 2000
            by_order = node_data.params_by_order(db, key, list(range(len(loaded))))
            assert len(by_order) == len(loaded)
            for order in range(len(loaded)):
                one = node_data.params(db, key, loaded.names[order])
                assert by_order[order] == one, loaded.names[order]
                if order in loaded.params:
                    assert loaded.params[order] == one
            for order, children in enumerate(loaded.children):
                assert all(int(loaded.parent[c]) == order for c in children)
