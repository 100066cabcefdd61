"""A lone merged replica with a second core (-w 2): its ranks are read by worker processes
while the task builds and merges those already read; the file is the one a single process
writes, and a broken rank is reported as itself."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from parallel_dumps import LAYOUTS, DumpFn

from graphboard.errors import DumpError
from graphboard.merge.flags import parallel_options
from graphboard.pipeline import BuildOptions, run_build
from vis_db_support import assert_same_vis_db


def _options(root: Path, golden: Path | None, out: Path, workers: int) -> BuildOptions:
    target, other = LAYOUTS["tp2"], LAYOUTS["tp1"]
    sides = [target] if golden is None else [target, other]
    parallel = parallel_options(
        rank_size=[layout.ranks for layout in sides],
        tp=[layout.tp for layout in sides],
        pp=[layout.pp for layout in sides],
        compare=golden is not None,
    )
    return BuildOptions(
        target=root, golden=golden, output_dir=out, parallel=parallel, workers=workers
    )


def _timings(path: Path) -> dict[str, float]:
    with sqlite3.connect(path) as conn:
        value = conn.execute("SELECT value FROM gb_meta WHERE key = 'timings'").fetchone()[0]
    conn.close()
    tasks: dict[str, dict[str, float]] = json.loads(value)["tasks"]
    (timings,) = tasks.values()
    return timings


@pytest.mark.parametrize("compare", [False, True], ids=["build", "compare"])
def test_ranks_read_aside_give_the_file_one_process_writes(
    parallel_dump: DumpFn, tmp_path: Path, compare: bool
) -> None:
    target = parallel_dump("tp2").root
    golden = parallel_dump("tp1").root if compare else None
    files = {}
    for workers in (1, 2):
        result = run_build(_options(target, golden, tmp_path / str(workers), workers))
        stage = "wait for and merge ranks" if workers == 2 else "read and merge ranks"
        assert stage in _timings(result.path)
        files[workers] = result.path
    assert_same_vis_db(files[1], files[2], ("one process", "ranks read aside"))


def test_a_broken_rank_read_aside_is_reported_as_itself(
    parallel_dump: DumpFn, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    shutil.copytree(parallel_dump("tp2").root, target)
    dump = target / "step0" / "rank1" / "dump.json"
    dump.write_text('{"task": "statistics", "data": {"Module.a.A.forward.0": ')
    out = tmp_path / "out"
    with pytest.raises(DumpError, match=rf"{dump}: the JSON document ends early"):
        run_build(_options(target, None, out, workers=2))
    assert list(out.iterdir()) == []
