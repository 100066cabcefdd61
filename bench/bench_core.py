"""The build core's figures (issue 17): default install, pure path, each compiled part on its
own, and an earlier checkout, side by side with msprobe, in one run.

python bench/bench_core.py                        # 27k records a side, 5 runs of each
python bench/bench_core.py --before /tmp/old      # plus a checkout at an earlier commit
python bench/bench_core.py --big                  # plus the 1,000,000-record compare
python bench/bench_core.py --record               # also write bench/results/core.md

The variants run in turn within each round (msprobe, default, pure, ...), so a drift of this
VM's speed reaches all of them alike. A variant is graph_build with an environment:
GRAPHBOARD_PURE=1 (the pure path), GRAPHBOARD_PURE=<part> (only that part in Python), or
PYTHONPATH=<before>/backend (an earlier checkout, its extensions built in place:
``git worktree add /tmp/old REV && (cd /tmp/old && python setup.py build_ext --inplace)``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from graphboard import accel
from harness import DATA, GRAPH_BUILD, Run, msprobe_binary, precompile, synthetic, timed

KEEP_SHARE = 0.15  # issue 17: a compiled part stays only if it saves this share of the wall time


@dataclass(slots=True)
class Variant:
    name: str
    env: dict[str, str] | None
    msprobe: bool = False
    runs: dict[str, list[Run]] = field(default_factory=dict)

    def median(self, case: str) -> float:
        return statistics.median(run.seconds for run in self.runs[case])

    def rss(self, case: str) -> float:
        return max(run.peak_rss_mb for run in self.runs[case])


def _command(variant: Variant, given: list[str], out: Path) -> list[str]:
    if variant.msprobe:
        binary = msprobe_binary()
        assert binary is not None
        return [binary, "graph_visualize", *given, "-o", str(out)]
    return [*GRAPH_BUILD, *given, "-o", str(out), "-q"]


def _run(variant: Variant, case: str, given: list[str]) -> None:
    with tempfile.TemporaryDirectory(dir=DATA) as out:
        run = timed(_command(variant, given, Path(out)), env=variant.env)
    variant.runs.setdefault(case, []).append(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, help="a checkout of an earlier commit")
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--no-msprobe", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    golden = synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0"
    target = (
        synthetic("layers256-target", "--layers", "256", "--variant", "target") / "step0" / "rank0"
    )
    built = [name for name, present in accel.active().items() if present]
    variants = [
        Variant("default install", None),
        Variant("pure (GRAPHBOARD_PURE=1)", {accel.PURE_ENV: "1"}),
    ]
    variants += [Variant(f"{part} in Python", {accel.PURE_ENV: part}) for part in built]
    if args.before is not None:
        precompile(args.before / "backend" / "graphboard")
        variants.append(
            Variant(f"before ({args.before})", {"PYTHONPATH": str(args.before / "backend")})
        )
    if not args.no_msprobe and msprobe_binary() is not None:
        variants.insert(0, Variant("msprobe 26.2.0", None, msprobe=True))
    cases = {
        "compare": ["-tp", str(target), "-gp", str(golden)],
        "build": ["-tp", str(target)],
    }
    for round_ in range(args.runs):
        for variant in variants:
            for case, given in cases.items():
                _run(variant, case, given)
        print(f"round {round_ + 1}/{args.runs} done", flush=True)
    lines = _table(variants)
    if args.big:
        lines += _big(variants)
    text = "\n".join(lines)
    print("\n" + text)
    if args.record:
        _record(text)


def _table(variants: list[Variant]) -> list[str]:
    msprobe = next((variant for variant in variants if variant.msprobe), None)
    default = variants[1] if msprobe is not None else variants[0]

    def versus(variant: Variant, case: str) -> str:
        if msprobe is None or variant is msprobe:
            return "–"
        return f"{msprobe.median(case) / variant.median(case):.1f}x"

    lines = [
        "## 27k records a side (26,883), medians",
        "",
        "| variant | compare s | vs msprobe | build s | vs msprobe | compare peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for variant in variants:
        lines.append(
            f"| {variant.name} | {variant.median('compare'):.2f} | {versus(variant, 'compare')} "
            f"| {variant.median('build'):.2f} | {versus(variant, 'build')} | {variant.rss('compare'):.0f} |"
        )
    parts = [variant for variant in variants if variant.name.endswith(" in Python")]
    if parts:
        lines += [
            "",
            "## What each compiled part saves (27k compare; only that part in Python)",
            "",
            "| part | compare s, part in Python | saves (share of that wall time) | kept (>= 15%) |",
            "|---|---:|---:|---|",
        ]
        for variant in parts:
            saved = 1 - default.median("compare") / variant.median("compare")
            lines.append(
                f"| {variant.name.removesuffix(' in Python')} | {variant.median('compare'):.2f} "
                f"| {saved:.0%} | {'yes' if saved >= KEEP_SHARE else 'no'} |"
            )
    return lines


def _big(variants: list[Variant]) -> list[str]:
    golden = synthetic("records1m-golden", "--records", "1000000") / "step0" / "rank0"
    target = (
        synthetic("records1m-target", "--records", "1000000", "--variant", "target")
        / "step0"
        / "rank0"
    )
    default = next(variant for variant in variants if not variant.msprobe)
    _run(default, "big", ["-tp", str(target), "-gp", str(golden)])
    run = default.runs["big"][0]
    return [
        "",
        "## 1,000,000 records a side, default install, one run",
        "",
        "| compare s | peak RSS MB | issue 31's bound |",
        "|---:|---:|---|",
        f"| {run.seconds:.1f} | {run.peak_rss_mb:.0f} | at most 120 s and 5,120 MB |",
    ]


def _record(text: str) -> None:
    path = Path(__file__).resolve().parent / "results" / "core.md"
    earlier = path.read_text() if path.exists() else ""
    stamp = time.strftime("%Y-%m-%d %H:%M")
    head = f"# build core ({stamp}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at start)\n\n"
    if earlier:
        earlier = "\n\n" + earlier.replace("# build core (", "## Earlier: build core (", 1)
    path.write_text(head + text + "\n" + earlier)


if __name__ == "__main__":
    main()
