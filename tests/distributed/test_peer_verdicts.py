"""A collective's dtype-aware verdict from its group's inputs on every rank, once the linker
has paired the calls (distributed/peer_verdicts.py, docs/dtype-aware.md §3.4), on two ranks
of hand-made msprobe dumps, target and golden, built through the real pipeline.

all_reduce.0: rank 1's input differs, and the sum on both ranks carries it: rank 0's own
input does not explain its output (a warning in the task), every rank's inputs do (a pass);
rank 1's does.
all_reduce.1: every input agrees with the golden, the sums do not: the communication itself
changed the data, an error introduced at both ranks' calls.
"""

from __future__ import annotations

from pathlib import Path

from comm_dumps import CommDump, record, reduce_op, tensor

from graphboard.compare.dtype_aware import MSG_PEERS_BEYOND, MSG_PEERS_WITHIN, MSG_WITHIN
from graphboard.compare.result import Level
from graphboard.pipeline import BuildOptions, run_build
from graphboard.store.reader import GraphKey, open_vis_db, search
from graphboard.verdict.rule_explain import explain_stored

CARRIED, CORRUPTED = "Distributed.all_reduce.0.forward", "Distributed.all_reduce.1.forward"
PRODUCER = "Torch.mul.0.forward"


def _all_reduce(inputs: list[float], output: list[float]) -> dict[str, object]:
    return record([tensor(inputs)], {"op": reduce_op()}, [tensor(output), reduce_op()])


def _dump(root: Path, peer_input: list[float], sums: list[float]) -> Path:
    """Rank 1's input is made by a call before it (the target's 5% arises there), so the
    collective reads it as a tensor the run made, not one entering from outside the dump."""
    dump = CommDump(root)
    own = [1.0, 2.0, 3.0, 4.0]
    dump.add(1, PRODUCER, record([tensor([1.0] * 4)], {}, [tensor(peer_input)]))
    for rank, first in ((0, own), (1, peer_input)):
        dump.add(
            rank, CARRIED, _all_reduce(first, [a + b for a, b in zip(own, peer_input, strict=True)])
        )
        dump.add(rank, CORRUPTED, _all_reduce(own if rank == 0 else [1.0] * 4, sums))
    return dump.write()


def test_the_group_band_passes_what_peers_carry_and_finds_what_the_call_changed(
    tmp_path: Path,
) -> None:
    golden = _dump(tmp_path / "golden", [1.0, 1.0, 1.0, 1.0], [2.0, 3.0, 4.0, 5.0])
    target = _dump(tmp_path / "target", [1.0, 1.0, 1.0, 1.05], [2.0, 3.0, 4.0, 5.5])
    path = run_build(BuildOptions(target=target, golden=golden, output_dir=tmp_path / "out")).path
    with open_vis_db(path, path.parent / "cache") as db:
        for rank in (0, 1):
            key = GraphKey("NPU", 0, rank)
            errors = search.filter_by(
                db, key, levels=[Level.ERROR], limit=100, rules="dtype-aware"
            ).items
            assert [node.name for node in errors if node.name.startswith("Distributed.")] == [
                CORRUPTED
            ]
            assert [node.introduced for node in errors if node.name == CORRUPTED] == ["error"]
            # rank 1's own input explains its sum: judged there as any op
            carried = MSG_PEERS_WITHIN if rank == 0 else MSG_WITHIN
            for name, template in ((CARRIED, carried), (CORRUPTED, MSG_PEERS_BEYOND)):
                found = explain_stored(db, key, name)
                assert found is not None
                judged = [p.why for p in found.params if p.is_output and p.difference is not None]
                assert judged == [template]
