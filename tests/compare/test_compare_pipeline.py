"""Compare runs end to end: rank/step pairing, data modes, worker pool."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from fixture_cases import fixture_path
from graphboard.errors import CompareError
from graphboard.pipeline import BuildOptions, run_build


def _copy(case: str, tmp_path: Path) -> tuple[Path, Path]:
    root = fixture_path(case)
    target, golden = tmp_path / "target", tmp_path / "golden"
    shutil.copytree(root / "target", target)
    shutil.copytree(root / "golden", golden)
    for path in [*target.rglob("*"), *golden.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # the shared copies are read-only
    return target, golden


def _meta(path: Path, key: str) -> object:
    with sqlite3.connect(path) as conn:
        return json.loads(
            conn.execute("SELECT value FROM gb_meta WHERE key = ?", (key,)).fetchone()[0]
        )


def test_rank_and_step_on_one_side_only_are_named_not_dropped_silently(tmp_path: Path) -> None:
    target, golden = _copy("convnet-ddp2", tmp_path)
    shutil.rmtree(golden / "step1" / "rank1")
    result = run_build(BuildOptions(target=target, golden=golden, output_dir=tmp_path / "out"))
    assert any("step 1" in warning and "target only [1]" in warning for warning in result.warnings)
    assert _meta(result.path, "missing") == {
        "ranks": {"1": {"target_only": [1], "golden_only": []}}
    }
    with sqlite3.connect(result.path) as conn:
        graphs = {row[0] for row in conn.execute("SELECT DISTINCT graph_id FROM tb_nodes")}
    assert "NPU_1_1" not in graphs and "NPU_1_0" in graphs and "NPU_0_1" in graphs

    shutil.rmtree(golden / "step1")
    result = run_build(BuildOptions(target=target, golden=golden, output_dir=tmp_path / "out2"))
    assert _meta(result.path, "missing") == {"steps": {"target_only": [1], "golden_only": []}}
    assert result.steps == [0]


def test_different_data_modes_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(
        CompareError,
        match=r"holds statistics data but the golden dump .* holds statistics with md5",
    ):
        run_build(
            BuildOptions(
                target=fixture_path("convnet-stats", "target"),
                golden=fixture_path("convnet-md5", "golden"),
                output_dir=tmp_path,
            )
        )
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_structure_mode_matches_without_scores(tmp_path: Path) -> None:
    target, golden = _copy("convnet-stats", tmp_path)
    for side in (target, golden):
        dump = side / "step0" / "rank0" / "dump.json"
        dump.write_text(dump.read_text().replace('"task": "statistics"', '"task": "structure"', 1))
    result = run_build(BuildOptions(target=target, golden=golden, output_dir=tmp_path / "out"))
    with sqlite3.connect(result.path) as conn:
        task, colors = conn.execute("SELECT task, node_colors FROM tb_config").fetchone()
        scored = conn.execute(
            "SELECT count(*) FROM tb_nodes WHERE precision_index IS NOT NULL"
        ).fetchone()[0]
        unmatched = conn.execute(
            "SELECT count(*) FROM tb_nodes WHERE matched_node_link = '[]'"
        ).fetchone()[0]
    assert task == "structure" and list(json.loads(colors)) == ["#C7C7C7"]
    assert scored == 0 and unmatched == 0


def test_worker_pool_writes_the_same_file_as_one_process(tmp_path: Path) -> None:
    case = fixture_path("convnet-ddp2")
    contents = []
    for workers in (1, 2):
        result = run_build(
            BuildOptions(
                target=case / "target",
                golden=case / "golden",
                output_dir=tmp_path / str(workers),
                workers=workers,
            )
        )
        with sqlite3.connect(result.path) as conn:
            contents.append(sorted(conn.execute("SELECT * FROM tb_nodes")))
    assert contents[0] == contents[1]
