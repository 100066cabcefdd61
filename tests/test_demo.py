"""The demo: a real model dumped twice with the probe, compared, and the differences found."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path


def test_demo_builds_a_compare_that_finds_the_planted_changes(tmp_path: Path) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from graphboard.cli import graphboard_main; raise SystemExit(graphboard_main())",
            "demo",
            "--out",
            str(tmp_path),
            "--no-serve",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    built = sorted((tmp_path / "graphs").glob("compare_*.vis.db"))
    assert len(built) == 1 and str(built[0]) in completed.stdout
    # It says what it found, as ci-check would, and where the viewer opens on it.
    graph = built[0].name.removesuffix(".vis.db")
    assert "demo:  first error: Functional.gelu.0.forward (NPU step 0 rank 0)" in completed.stdout
    assert (
        f"http://127.0.0.1:8000/?graph={graph}&step=0&rank=0&node=Functional.gelu.0.forward"
        in completed.stdout
    )
    with sqlite3.connect(built[0]) as conn:
        first_error = conn.execute(
            "SELECT first_error FROM gb_graphs WHERE data_source = 'NPU'"
        ).fetchone()[0]
        errors = {
            row[0]
            for row in conn.execute(
                "SELECT node_name FROM tb_nodes WHERE data_source = 'NPU' AND precision_index = 1"
            )
        }
        overflow_check = conn.execute("SELECT overflow_check FROM tb_config").fetchone()[0]
    assert first_error == "Functional.gelu.0.forward"  # the tanh GELU in block 0 comes first
    assert "Torch.softmax.1.forward" in errors  # block 1's bfloat16 softmax
    assert overflow_check == 1
    for run in ("golden", "target"):
        assert (tmp_path / run / "step0" / "rank0" / "dump.json").exists()
