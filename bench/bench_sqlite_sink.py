"""The compiled tb_nodes writer (_btree.c) against the tuned SQLite sink, on the 27k compare:
wall and CPU time of each, alternated round by round (issue 31, item 4;
bench/results/sqlite_sink.md).

python bench/bench_sqlite_sink.py --runs 8

Only the sink differs: GRAPHBOARD_PURE=btree writes through store/sqlite_sink.py with every
other compiled part in use. CPU time (user + system of graph_build and its read-aside worker)
is given beside the wall time because on a shared machine it is the steadier of the two; the
issue's rule (a compiled part stays only if it saves 15% of the wall time) is about wall time
on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from graphboard import accel
from harness import DATA, GRAPH_BUILD, REPO, precompile, synthetic

KEEP_SHARE = 0.15


@dataclass(slots=True)
class Variant:
    name: str
    env: dict[str, str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def _run(variant: Variant, given: list[str]) -> None:
    with tempfile.TemporaryDirectory(dir=DATA) as out:
        started = time.perf_counter()
        process = subprocess.Popen(
            [*GRAPH_BUILD, *given, "-o", out, "-q"],
            stdout=subprocess.DEVNULL,
            env={**os.environ, **variant.env},
        )
        _, status, usage = os.wait4(process.pid, 0)
        variant.wall.append(time.perf_counter() - started)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"graph_build {variant.name} failed ({status})")
    variant.cpu.append(usage.ru_utime + usage.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    if not accel.active()["btree"]:
        raise SystemExit("graphboard_btree._btree is not installed here: nothing to compare")
    golden = synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0"
    target = (
        synthetic("layers256-target", "--layers", "256", "--variant", "target") / "step0" / "rank0"
    )
    given = ["-tp", str(target), "-gp", str(golden)]
    precompile(REPO / "backend" / "graphboard")
    compiled = Variant("default (compiled _btree)", {})
    sqlite = Variant("tuned SQLite sink (GRAPHBOARD_PURE=btree)", {accel.PURE_ENV: "btree"})
    for round_ in range(args.runs):
        for variant in (compiled, sqlite):
            _run(variant, given)
        print(f"round {round_ + 1}/{args.runs}, load {os.getloadavg()[0]:.1f}", flush=True)
    print("\n| variant | wall s (median) | CPU s (median) |\n|---|---:|---:|")
    for variant in (compiled, sqlite):
        wall, cpu = statistics.median(variant.wall), statistics.median(variant.cpu)
        print(f"| {variant.name} | {wall:.2f} | {cpu:.2f} |")
    for measure in ("wall", "cpu"):
        saved = 1 - statistics.median(getattr(compiled, measure)) / statistics.median(
            getattr(sqlite, measure)
        )
        kept = "over" if saved >= KEEP_SHARE else "under"
        print(f"\n_btree saves {saved:.0%} of the {measure} time ({kept} 15%)", end="")
    print()


if __name__ == "__main__":
    main()
