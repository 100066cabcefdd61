"""networkx is imported only when ranks exchanged data: single-rank builds do not pay for it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from comm_dumps import CommDump, record, tensor

A = tensor([1.0, 2.0, 3.0, 4.0])

_PROBE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from graphboard.pipeline import BuildOptions, run_build
    loaded_at_import = "networkx" in sys.modules
    run_build(BuildOptions(target=Path(sys.argv[1]), output_dir=Path(sys.argv[2]), workers=1))
    print(loaded_at_import, "networkx" in sys.modules)
    """
)


def _networkx_loaded(dump: CommDump, out: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(dump.write()), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_single_rank_build_never_imports_networkx(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    dump.add(0, "Functional.relu.0.forward", record([A], {}, [A]))
    dump.add(0, "Distributed.barrier.0.forward", record())  # a comm op, but no peer to link
    assert _networkx_loaded(dump, tmp_path / "out") == "False False"


def test_ranks_exchanging_data_import_it_for_the_topology(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    for rank in range(2):
        dump.add(rank, "Distributed.barrier.0.forward", record())
    assert _networkx_loaded(dump, tmp_path / "out") == "False True"


def test_ranks_without_traffic_are_isolated_components(tmp_path: Path) -> None:
    dump = CommDump(tmp_path)
    for rank in range(2):
        dump.add(rank, "Functional.relu.0.forward", record([A], {}, [A]))
    built = dump.build()
    assert built.query("SELECT * FROM gb_topology") == []
    assert built.query(
        "SELECT rank, in_dump, out_ops, in_ops, peers, component FROM gb_topology_ranks"
        " ORDER BY rank"
    ) == [(0, 1, 0, 0, 0, 0), (1, 1, 0, 0, 0, 1)]
    assert built.meta_links()["topology"]["components"] == {"NPU/0": 2}
