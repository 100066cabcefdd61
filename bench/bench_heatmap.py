"""Heatmap latency (GET /api/graphs/{graph}/heatmap) on synthetic multi-rank compares.

Two compares of the synthetic transformer (bench/make_synthetic_dump.py, 2 steps) are built
once with graph_build and cached under bench/data/: 4 ranks and 64 ranks. ``graphboard serve``
runs in its own process; each shape is asked once cold (the graphs' columns not yet in the
server's cache) and then ``--requests`` times, one at a time, over HTTP with keep-alive.

    python bench/bench_heatmap.py                # 16 layers, 4 and 64 ranks
    python bench/bench_heatmap.py --record       # also write bench/results/heatmap.md
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_api import Server, percentile
from harness import DATA, GRAPH_BUILD, recorded, synthetic

TARGET_MS = {4: 300, 64: 2000}  # the bounds, for a 4-rank and a 64-rank compare


def multi_rank_compare(layers: int, ranks: int, steps: int) -> Path:
    folder = DATA / f"heatmap-l{layers}-r{ranks}-s{steps}"
    path = folder / "compare.vis.db"
    if path.exists():
        return path
    shape = ("--layers", str(layers), "--ranks", str(ranks), "--steps", str(steps))
    golden = synthetic(f"{folder.name}-golden", *shape)
    target = synthetic(f"{folder.name}-target", *shape, "--variant", "target")
    started = time.perf_counter()
    subprocess.run(
        [
            *(*GRAPH_BUILD, "-tp", str(target), "-gp", str(golden)),
            *("-o", str(folder), "--name", path.name, "-q"),
        ],
        check=True,
    )
    print(f"built {path} in {time.perf_counter() - started:.0f}s", flush=True)
    return path


def shapes(ranks: int) -> list[tuple[str, dict[str, Any]]]:
    module = "Module.decoder.layers.0.TransformerLayer"
    return [
        ("module x rank, error", {"rows": "module", "cols": "rank", "statistic": "error"}),
        (
            "module x rank, norm diff",
            {"rows": "module", "cols": "rank", "statistic": "norm", "side": "diff"},
        ),
        (
            "module x step, level",
            {"rows": "module", "cols": "step", "statistic": "level", "rank": ranks - 1},
        ),
        (
            "rank x step, max",
            {"rows": "rank", "cols": "step", "statistic": "max", "module": module},
        ),
        ("precision map, error", {"rows": "module", "cols": "pass", "statistic": "error"}),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    files = {ranks: multi_rank_compare(args.layers, ranks, 2) for ranks in (4, 64)}
    with recorded("heatmap", args.record), tempfile.TemporaryDirectory() as state:
        print(f"synthetic transformer, {args.layers} layers, 2 steps; ms per request")
        print(f"{'file':>9} {'shape':<26} {'cold':>8} {'p50':>8} {'p95':>8} {'max':>8}  bound")
        for ranks, path in files.items():
            server = Server(path.parent, Path(state) / f"r{ranks}")
            try:
                server.get("/api/graphs")  # up and listing: what a browser asks first
                for name, params in shapes(ranks):
                    cold, answer = server.get(
                        f"/api/graphs/{path.stem.removesuffix('.vis')}/heatmap", **params
                    )
                    timings = [
                        server.get(
                            f"/api/graphs/{path.stem.removesuffix('.vis')}/heatmap", **params
                        )[0]
                        for _ in range(args.requests)
                    ]
                    cells = len(answer["rows"]) * len(answer["cols"])
                    print(
                        f"{ranks:>3} ranks {name:<26} {cold:8.1f} {statistics.median(timings):8.1f} "
                        f"{percentile(timings, 0.95):8.1f} {max(timings):8.1f}  "
                        f"< {TARGET_MS[ranks]} ({cells} cells)",
                        flush=True,
                    )
            finally:
                server.close()


if __name__ == "__main__":
    main()
