"""What gb_rank_stats (each rank's own statistics of merged nodes, store/rank_stats.py) costs a
merged build: graph_build in-process on bench_merge.py's real Megatron-style dumps, with the
table and without it (its write turned off), alternated round by round (the machine's speed
drifts); build wall and CPU medians, the table's rows, entries and bytes against the file's.

    .venv/bin/python bench/bench_rank_stats.py [--rounds 5]   # after bench_merge.py made the dumps
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from graphboard.merge.flags import parallel_options
from graphboard.pipeline import BuildOptions, run_build
from graphboard.store import rank_stats

DATA = Path(__file__).resolve().parent / "data"
LAYOUTS = {"tp2": (2, 1, 2), "tp2pp2": (2, 2, 4), "dp2tp2": (2, 1, 4)}  # tp, pp, ranks
WRITE = rank_stats.write


def _build(
    root: Path, flags: tuple[int, int, int], out: Path, table: bool
) -> tuple[float, float, Path]:
    tp, pp, ranks = flags
    rank_stats.write = WRITE if table else (lambda conn, graphs: None)
    parallel = parallel_options(rank_size=[ranks], tp=[tp], pp=[pp], compare=False)
    wall, cpu = time.perf_counter(), time.process_time()
    path = run_build(BuildOptions(target=root, output_dir=out, parallel=parallel)).path
    return time.perf_counter() - wall, time.process_time() - cpu, path


def _table(path: Path) -> tuple[int, int, int, int]:
    """(rows, merged nodes, rank entries, bytes of data) of the file's gb_rank_stats."""
    with sqlite3.connect(path) as conn:
        data = [row[0] for row in conn.execute(f"SELECT data FROM {rank_stats.TABLE}")]
    decoded = [rank_stats.decode(item) for item in data]
    nodes = sum(len(row) for row in decoded)
    entries = sum(len(ranks) for row in decoded for node in row.values() for ranks in node.values())
    return len(data), nodes, entries, sum(len(item) for item in data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    print(
        "| layout | with: wall ms, CPU ms | without: wall ms, CPU ms | rows | merged nodes | rank entries | table KiB | file KiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, flags in LAYOUTS.items():
        root = DATA / f"merge-{name}" / "dump"
        times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        with tempfile.TemporaryDirectory() as work:
            path = Path(work)
            for index in range(rounds):
                for table in (index % 2 == 0, index % 2 == 1):
                    wall, cpu, built = _build(root, flags, path / f"{index}-{table}", table)
                    times[table].append((wall, cpu))
                    if table:
                        shown, size = _table(built), built.stat().st_size
        med = {
            table: [statistics.median(t[i] for t in times[table]) * 1000 for i in (0, 1)]
            for table in times
        }
        rows, nodes, entries, data = shown
        print(
            f"| {name} | {med[True][0]:.0f}, {med[True][1]:.0f} | {med[False][0]:.0f}, {med[False][1]:.0f} "
            f"| {rows} | {nodes} | {entries} | {data / 1024:.1f} | {size / 1024:.0f} |"
        )


if __name__ == "__main__":
    main()
