"""The 27k-record compare with this checkout's backend against an older commit's, one run,
alternating (issue 29: at most 10% slower than before the sensitivity-aware rules).

python bench/bench_rules_versus.py --commit fc36d5f             # 5 rounds of each
python bench/bench_rules_versus.py --commit fc36d5f --record    # also write bench/results/rules_versus.md

The older commit's ``backend/`` is taken with ``git archive`` into a temporary folder (its
compiled parts copied from this checkout when the sources did not change, so both run the
same accelerators); each round runs ``graph_build -tp T -gp G --workers 1`` once per side in
alternating order, so a drift of this VM's speed reaches both alike. Wall seconds and the CPU
seconds of the build process (``RUSAGE_CHILDREN``, which a loaded VM disturbs less) are kept.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from harness import DATA, REPO, synthetic

RESULTS = Path(__file__).with_name("results") / "rules_versus.md"
GRAPH_BUILD = str(REPO / ".venv" / "bin" / "graph_build")


def old_backend(commit: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "backend"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    accel = REPO / "backend" / "graphboard" / "accel"
    changed = subprocess.run(
        ["git", "-C", str(REPO), "diff", "--quiet", commit, "--", str(accel)], check=False
    )
    if changed.returncode == 0:  # the same C sources: the same built modules
        for built in accel.glob("*.so"):
            shutil.copy2(built, into / "backend" / "graphboard" / "accel" / built.name)
    return into / "backend"


def one_build(backend: Path, target: Path, golden: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one graph_build with ``backend`` first on the path."""
    with tempfile.TemporaryDirectory(dir=DATA) as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(
            [GRAPH_BUILD, "-tp", str(target), "-gp", str(golden), "-o", out, "--workers", "1"],
            env=dict(os.environ, PYTHONPATH=str(backend)),
            check=True,
            capture_output=True,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    golden = synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0"
    target = (
        synthetic("layers256-target", "--layers", "256", "--variant", "target") / "step0" / "rank0"
    )
    with tempfile.TemporaryDirectory(dir=DATA) as scratch:
        sides = {args.commit: old_backend(args.commit, Path(scratch)), "this": REPO / "backend"}
        walls: dict[str, list[float]] = {name: [] for name in sides}
        cpus: dict[str, list[float]] = {name: [] for name in sides}
        for round_ in range(args.runs):
            order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
            for name in order:
                wall, cpu = one_build(sides[name], target, golden)
                walls[name].append(wall)
                cpus[name].append(cpu)
            print(
                f"round {round_ + 1}: "
                + ", ".join(f"{n} {walls[n][-1]:.2f} s ({cpus[n][-1]:.2f} s CPU)" for n in sides),
                flush=True,
            )
    old, new = args.commit, "this"
    lines = [
        "# The 27k-record compare against an older commit (bench/bench_rules_versus.py)",
        "",
        f"bench/data/layers256-target (bf16) vs -golden (fp32), 26,883 records a side, "
        f"{args.runs} alternating rounds, graph_build --workers 1:",
        "",
        "| backend | median wall s | min wall s | median CPU s | min CPU s |",
        "|---|---|---|---|---|",
    ]
    for name in sides:
        lines.append(
            f"| {name} | {statistics.median(walls[name]):.3f} | {min(walls[name]):.3f} | "
            f"{statistics.median(cpus[name]):.3f} | {min(cpus[name]):.3f} |"
        )
    lines += [
        "",
        f"ratio this / {old}: wall medians {statistics.median(walls[new]) / statistics.median(walls[old]):.3f}, "
        f"wall minima {min(walls[new]) / min(walls[old]):.3f}, "
        f"CPU medians {statistics.median(cpus[new]) / statistics.median(cpus[old]):.3f}, "
        f"CPU minima {min(cpus[new]) / min(cpus[old]):.3f}",
    ]
    print("\n".join(lines))
    if args.record:
        RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
