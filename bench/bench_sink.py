"""The part sink alone switched: graph_build's compare with tb_nodes written by the compiled
B-tree writer, by SQLite in the caller's thread, or by SQLite with its writer thread
(GRAPHBOARD_PURE=btree turns off the compiled sink alone).

Runs alternate (compiled, sqlite, sqlite-thread, compiled, ...) so the machine's drift
spreads over all three; each run is a fresh process, as a user runs graph_build.

    .venv/bin/python bench/bench_sink.py --runs 5 -- -tp bench/data/layers256-target \
        -gp bench/data/layers256-golden
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SINKS = ("compiled", "sqlite", "sqlite-thread")

# Run in the child: the writer thread on or off, then graph_build as its console script runs.
_CHILD = """
import sys
from graphboard.store import sink, sqlite_sink
sqlite_sink.IN_BACKGROUND = sys.argv.pop(1) == "sqlite-thread"
import graphboard.build.task as task
if hasattr(task, "PartFile"):  # before the build core opened its part by open_sink
    task.PartFile = sink.open_sink
from graphboard.cli import graph_build_command
sys.exit(graph_build_command())
"""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(sink: str, arguments: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one graph_build with ``sink``."""
    output = Path(tempfile.mkdtemp(prefix="bench-sink-"))
    try:
        cpu = _cpu()
        started = time.perf_counter()
        pure = "" if sink == "compiled" else "btree"  # the compiled sink alone turned off
        subprocess.run(
            [sys.executable, "-c", _CHILD, sink, *arguments, "-o", str(output)],
            env={**os.environ, "GRAPHBOARD_PURE": pure},
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return time.perf_counter() - started, _cpu() - cpu
    finally:
        shutil.rmtree(output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sinks", default=",".join(SINKS))
    parser.add_argument("graph_build", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    arguments = [a for a in options.graph_build if a != "--"]
    sinks = options.sinks.split(",")
    times: dict[str, list[tuple[float, float]]] = {sink: [] for sink in sinks}
    for _ in range(options.runs):
        for sink in sinks:
            times[sink].append(_run(sink, arguments))
    base = statistics.median(wall for wall, _ in times[sinks[0]])
    print("| sink | wall median | vs first | CPU median | wall runs |")
    print("|---|---|---|---|---|")
    for sink in sinks:
        wall = statistics.median(wall for wall, _ in times[sink])
        cpu = statistics.median(cpu for _, cpu in times[sink])
        runs = " ".join(f"{run:.2f}" for run, _ in times[sink])
        print(f"| {sink} | {wall:.2f} s | {wall / base - 1:+.0%} | {cpu:.2f} s | {runs} |")


if __name__ == "__main__":
    main()
