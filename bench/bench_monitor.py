"""Training-state monitor data at scale: import time beside msprobe's ``data2db`` in one run,
and the monitor page's heatmap latency.

Synthetic data in the monitor's own CSV format (``<time>-rank<r>-<id>/actv_<a>-<b>.csv`` and
``grad_reduced_...``, its header and its 12 printed decimals), ``--ranks`` x ``--steps`` x
``--modules`` (default 8 x 1,000 x 200: each module's input and output activations and its
weight's reduced gradient, 4.8 million rows), ten steps a file, generated once under
bench/data/. A golden copy and a target whose module ``modules // 2`` moves by 1% from step
``steps // 2`` are made; the target is imported by graphboard (``read_csv_run`` +
msprobe's tables: what ``data2db`` makes) and by ``msprobe data2db --format monitor`` (one
process each), then ``graphboard monitor`` compares the two and the heatmap of one metric over
all steps on one rank is timed (``graphboard.monitor.views.heatmap``, as the API serves it).

    python bench/bench_monitor.py                 # 8 x 1000 x 200
    python bench/bench_monitor.py --record        # also write bench/results/monitor.md
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from graphboard.monitor.compare import compare_runs, read_run
from graphboard.monitor.csv_reader import read_csv_run
from graphboard.monitor.store import save_report
from graphboard.monitor.trend_db import write_trend_tables
from graphboard.monitor.views import heatmap
from harness import DATA, msprobe_binary, recorded

STEPS_PER_FILE = 10
ACTV_HEADER = "vpp_stage,name,step,micro_step,norm,mean,max,min,shape,dtype\n"
GRAD_HEADER = "vpp_stage,name,step,norm,mean,max,min,shape,dtype\n"


def make_run(root: Path, ranks: int, steps: int, modules: int, faulty: int | None) -> Path:
    """One run's CSV folders (the golden when ``faulty`` is None), generated once."""
    if (root / "done").is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    for rank in range(ranks):
        folder = root / f"Dec01_00-00-00-rank{rank}-bench{rank:04d}"
        folder.mkdir(parents=True)
        rng = random.Random(rank)
        base = [1.0 + rng.random() for _ in range(modules)]
        for first in range(0, steps, STEPS_PER_FILE):
            last = min(first + STEPS_PER_FILE, steps) - 1
            actv, grad = [ACTV_HEADER], [GRAD_HEADER]
            for step in range(first, last + 1):
                drift = 1.0 + 0.001 * step
                for module in range(modules):
                    scale = base[module] * drift
                    if faulty == module and step >= steps // 2:
                        scale *= 1.01
                    name = f"layers.{module}"
                    for io, factor in (("input", 1.0), ("output", 1.1)):
                        value = scale * factor
                        actv.append(
                            f"0,{name}.{io},{step},0,{value * 40:.12f},{value * 0.01:.12f},"
                            f'{value * 3:.12f},{-value * 3:.12f},"[4, 128, 64]",torch.bfloat16\n'
                        )
                    grad.append(
                        f"0,{name}.weight,{step},{scale * 0.1:.12f},{scale * 1e-6:.12f},"
                        f'{scale * 0.01:.12f},{-scale * 0.01:.12f},"[64, 64]",torch.float32\n'
                    )
            (folder / f"actv_{first}-{last}.csv").write_text("".join(actv))
            (folder / f"grad_reduced_{first}-{last}.csv").write_text("".join(grad))
    (root / "done").write_text("")
    return root


def import_graphboard(run: Path, out: Path) -> float:
    started = time.perf_counter()
    connection = sqlite3.connect(out)
    connection.execute("PRAGMA journal_mode = OFF")
    connection.execute("PRAGMA synchronous = OFF")
    with connection:
        write_trend_tables(connection, read_csv_run(run))
    connection.close()
    return time.perf_counter() - started


def import_msprobe(binary: str, run: Path, out: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [binary, "data2db", "--data", str(run), "--db", str(out), "--format", "monitor"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--modules", type=int, default=200)
    parser.add_argument("--requests", type=int, default=5, help="heatmap requests timed")
    parser.add_argument("--record", action="store_true")
    parser.add_argument(
        "--skip-import", action="store_true", help="only the compare and the heatmap (no msprobe)"
    )
    args = parser.parse_args()
    shape = f"r{args.ranks}-s{args.steps}-m{args.modules}"
    started = time.perf_counter()
    golden = make_run(DATA / f"monitor-{shape}-golden", args.ranks, args.steps, args.modules, None)
    target = make_run(
        DATA / f"monitor-{shape}-target", args.ranks, args.steps, args.modules, args.modules // 2
    )
    generated = time.perf_counter() - started
    rows = args.ranks * args.steps * args.modules * 3
    binary = msprobe_binary()
    with recorded("monitor", args.record), tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        print(
            f"synthetic monitor CSVs: {args.ranks} ranks x {args.steps} steps x {args.modules} "
            f"modules (actv input+output, grad_reduced): {rows:,} rows a run "
            f"(made or found in {generated:.0f} s)"
        )
        ours = 0.0 if args.skip_import else import_graphboard(target, work / "graphboard.trend.db")
        if args.skip_import:
            print("import: skipped (--skip-import)")
        else:
            print(f"import, graphboard (read_csv_run + msprobe's tables): {ours:8.1f} s")
        if args.skip_import:
            pass
        elif binary is None:
            print("import, msprobe data2db: msprobe not found (GRAPHBOARD_MSPROBE_BIN)")
        else:
            theirs = import_msprobe(binary, target, work / "msprobe")
            print(f"import, msprobe data2db --format monitor:             {theirs:8.1f} s")
            print(f"graphboard / msprobe: {ours / theirs:.2f} (at most 1.00 is the bound)")
        started = time.perf_counter()
        report = compare_runs(read_run(target), read_run(golden))
        compared = time.perf_counter() - started
        started = time.perf_counter()
        path = save_report(report, work)
        saved = time.perf_counter() - started
        print(
            f"graphboard monitor: compare {compared:.1f} s, write {saved:.1f} s; {report.summary()}"
        )
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        timings = []
        for request in range(args.requests):
            for side in ("diff", "target"):
                began = time.perf_counter()
                grid = heatmap(connection, "actv", "norm", side, request % args.ranks)
                timings.append(time.perf_counter() - began)
        connection.close()
        cells = len(grid.rows) * len(grid.cols)
        print(
            f"heatmap actv norm, module x step on one rank ({len(grid.rows)} x {len(grid.cols)} = "
            f"{cells:,} cells): first {timings[0] * 1000:.0f} ms, worst {max(timings) * 1000:.0f} ms "
            f"of {len(timings)} (bound < 1000 ms)"
        )


if __name__ == "__main__":
    main()
