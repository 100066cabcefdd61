"""The dtype-aware rule set's cost (issue 19): the 27k-record compare with and without it, in
one run, alternating, and the ratio (the issue allows at most 10% slower).

python bench/bench_dtype_rules.py             # 5 rounds of each
python bench/bench_dtype_rules.py --msprobe   # msprobe's graph_visualize once beside them
python bench/bench_dtype_rules.py --record    # also write bench/results/dtype_rules.md

Both variants are the same build in this process (``--workers 1``), one with the score stage's
second call (``compare.dtype_graph.score_graph``) and one without it; rounds alternate their
order, so a drift of this VM's speed reaches both alike. The second rule set's own time inside
the score stage is timed too (it is a linear pass over parameters already in memory).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from graphboard.compare import dtype_graph
from graphboard.pipeline import BuildOptions, run_build, stages
from harness import DATA, msprobe_binary, synthetic, timed

RESULTS = Path(__file__).with_name("results") / "dtype_rules.md"


@contextmanager
def second_rule_set(enabled: bool, spent: list[float]) -> Iterator[None]:
    """The score stage with (timed) or without the dtype-aware call."""
    original: Callable[..., Any] = stages.score_graph

    def timed_score(*args: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args)
        finally:
            spent.append(time.perf_counter() - started)

    stages.score_graph = timed_score if enabled else (lambda *_args: None)  # type: ignore[assignment]
    try:
        yield
    finally:
        stages.score_graph = original  # type: ignore[assignment]


def build_seconds(target: Path, golden: Path, enabled: bool, spent: list[float]) -> float:
    with tempfile.TemporaryDirectory(dir=DATA) as out, second_rule_set(enabled, spent):
        started = time.perf_counter()
        run_build(BuildOptions(target=target, golden=golden, output_dir=Path(out), workers=1))
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--msprobe", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    golden = synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0"
    target = (
        synthetic("layers256-target", "--layers", "256", "--variant", "target") / "step0" / "rank0"
    )
    assert dtype_graph.score_graph is stages.score_graph
    with_rules: list[float] = []
    without: list[float] = []
    inside: list[float] = []
    build_seconds(target, golden, True, [])  # warm the page cache and imports
    for round_number in range(args.runs):
        order = (True, False) if round_number % 2 == 0 else (False, True)
        for enabled in order:
            seconds = build_seconds(target, golden, enabled, inside)
            (with_rules if enabled else without).append(seconds)
    lines = [
        "# The dtype-aware rule set's cost (bench/bench_dtype_rules.py)",
        "",
        f"27k-record compare (bench/data/layers256-target vs -golden), {args.runs} alternating "
        "rounds, one process (--workers 1), median seconds:",
        "",
        "| variant | median s | min s |",
        "|---|---|---|",
        f"| msprobe rules only | {statistics.median(without):.3f} | {min(without):.3f} |",
        f"| msprobe + dtype-aware | {statistics.median(with_rules):.3f} | {min(with_rules):.3f} |",
        "",
        f"ratio (with / without, medians): {statistics.median(with_rules) / statistics.median(without):.3f}",
        f"ratio of the fastest runs (with / without): {min(with_rules) / min(without):.3f}",
        f"the dtype-aware pass itself (score_graph), median: {statistics.median(inside):.3f} s, "
        f"{statistics.median(inside) / statistics.median(without):.1%} of the build without it "
        "(the figure a loaded VM disturbs least: one pass, timed inside the build)",
    ]
    if args.msprobe and (binary := msprobe_binary()) is not None:
        with tempfile.TemporaryDirectory(dir=DATA) as out:
            run = timed(
                [binary, "graph_visualize", "-tp", str(target), "-gp", str(golden), "-o", out]
            )
        lines.append(f"msprobe graph_visualize, once: {run.seconds:.3f} s")
    print("\n".join(lines))
    if args.record:
        RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
