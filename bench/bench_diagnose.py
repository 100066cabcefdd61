"""graphboard diagnose: right / wrong per real case, beside what msprobe's overflow levels let
a user read off (msprobe graph_visualize -oc run on the dump: the first node of its
"critical" list, the level meaning "inputs normal, output inf/nan: look here first"), and the
time of ``diagnose`` on a 27k-record compare.

    python bench/bench_diagnose.py --work /tmp/diag-bench            # cases + timing
    python bench/bench_diagnose.py --work /tmp/diag-bench --no-cases # timing only

Cases are made with graphboard's probe and msprobe's dumper (tests/diagnose/diagnose_cases.py;
msprobe's with the Python beside GRAPHBOARD_MSPROBE_BIN), plus the shared msprobe fp16 fixture; the 27k compare with bench/make_synthetic_dump.py (256 layers).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "diagnose"))

from graphboard.diagnose.answer import Diagnosis  # noqa: E402
from graphboard.diagnose.command import diagnosis_of, file_diagnosis  # noqa: E402
from graphboard.pipeline import BuildOptions, run_build  # noqa: E402
from graphboard.store.graph_views import GraphKey  # noqa: E402
from graphboard.store.reader import listing, open_vis_db, search  # noqa: E402

SHARED = Path(os.environ.get("GRAPHBOARD_SHARED", ROOT.parent / "shared"))
FIXTURE = SHARED / "fixtures" / "convnet-overflow" / "target"
CASES = ROOT / "tests" / "diagnose" / "diagnose_cases.py"
Check = Callable[[Diagnosis], bool]


def _first_critical(paths: list[Path], scratch: Path) -> str:
    """What msprobe's own output lets a user read off: ``msprobe graph_visualize -oc`` on the
    dump (GRAPHBOARD_MSPROBE_BIN), its file opened, and per rank the first node of the list
    its "critical" filter shows (the level meaning "inputs normal, output inf/nan: look here
    first"). Two runs: msprobe names no op (its compare shows the differences only)."""
    if len(paths) != 1:
        return "- (names no op)"
    msprobe = os.environ.get("GRAPHBOARD_MSPROBE_BIN")
    if not msprobe:
        return "? (set GRAPHBOARD_MSPROBE_BIN)"
    step = next(p for p in sorted(paths[0].iterdir()) if p.name.startswith("step"))
    out = scratch / "msprobe-oc"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    subprocess.run(
        [msprobe, "graph_visualize", "-tp", str(step), "-oc", "-o", str(out)],
        check=True,
        capture_output=True,
    )
    built = next(out.glob("*.vis.db"))
    shown = []
    with open_vis_db(built, scratch) as db:
        for stats in listing.graphs(db):
            key = GraphKey(stats.side, stats.step, stats.rank)
            page = search.filter_by(db, key, overflows=["critical"], limit=1)
            first = page.items[0].name if page.items else "none"
            shown.append(f"r{stats.rank}:{first}")
    return " ".join(shown)


def _msprobe_python() -> Path | None:
    """msprobe's Python, beside GRAPHBOARD_MSPROBE_BIN: its dumper runs there."""
    msprobe = os.environ.get("GRAPHBOARD_MSPROBE_BIN")
    python = Path(msprobe).with_name("python") if msprobe else None
    return python if python is not None and python.is_file() else None


def cases(work: Path) -> list[tuple[str, list[Path], Check]]:
    import diagnose_cases as make

    def single(case: str, task: str = "statistics", perturb: bool = False) -> Path:
        out = work / f"{case}-{task}-{perturb}"
        if not out.is_dir():
            make.make(case, out, "probe", task, perturb)
        return out

    def ranks(world: int, parallel: str, bad: int, fill: float = math.nan) -> Path:
        out = work / f"ranks-{parallel}{world}-{bad}-{fill}"
        if not out.is_dir():
            make.make_ranks(out, world, parallel, bad, fill=fill)
        return out

    def born(rank: int, world: int) -> Check:
        return lambda d: (
            d.rank == rank
            and d.node == "Functional.gelu.0.forward"
            and [r.state for r in d.ranks]
            == ["born" if r == rank else "receiver" for r in range(world)]
        )

    found: list[tuple[str, list[Path], Check]] = [
        (
            "msprobe fp16 fixture: Tensor.__mul__ output",
            [FIXTURE],
            lambda d: (d.node, d.node_class) == ("Tensor.__mul__.0.forward", "output"),
        ),
    ]
    msprobe_python = _msprobe_python()
    dumpers = ["probe", "msprobe"] if msprobe_python else ["probe"]
    for dumper in dumpers:

        def run(
            case: str, task: str = "statistics", perturb: bool = False, dumper: str = dumper
        ) -> Path:
            if dumper == "probe":
                return single(case, task, perturb)
            out = work / f"msprobe-{case}-{task}-{perturb}"
            if not out.is_dir():
                command = [str(msprobe_python), str(CASES), case, str(out), "--dumper", "msprobe"]
                command += ["--task", task] + (["--perturb"] if perturb else [])
                subprocess.run(command, check=True, capture_output=True, cwd=work)
            return out

        found += [
            (
                f"{dumper}: fp16 overflow in block 1's Scale: output",
                [run("overflow")],
                lambda d: d.node_class == "output" and "blocks.1.scale" in (d.module or ""),
            ),
            (
                f"{dumper}: weight inf from the previous update: weight",
                [run("weight")],
                lambda d: d.node_class == "weight" and "blocks.1.mlp.fc1" in (d.module or ""),
            ),
            (
                f"{dumper}: input inf from outside the dump: input",
                [run("input")],
                lambda d: d.node_class == "input",
            ),
            (
                f"{dumper}: masked attention, clean: no origin",
                [run("clean")],
                lambda d: not d.found,
            ),
            (
                f"{dumper}: transformers Llama, eager masks: no origin",
                [run("llama")],
                lambda d: not d.found,
            ),
        ]
        for task in ("statistics", "md5"):
            found.append(
                (
                    f"{dumper}: non-deterministic gelu ({task})",
                    [run("nondet", task), run("nondet", task, True)],
                    lambda d: (
                        (d.node, d.node_class) == ("Functional.gelu.0.forward", "nondeterministic")
                    ),
                )
            )
            found.append(
                (
                    f"{dumper}: uncaptured input ({task})",
                    [run("uncaptured", task), run("uncaptured", task, True)],
                    lambda d: d.node_class == "uncaptured_input",
                )
            )
    for world, parallel, bad, fill in (
        (4, "dp", 2, math.nan),
        (4, "dp", 0, math.inf),
        (2, "tp", 1, math.nan),
        (2, "tp", 0, -math.inf),
    ):
        found.append(
            (
                f"{fill} on rank {bad} of {world} ({parallel})",
                [ranks(world, parallel, bad, fill)],
                born(bad, world),
            )
        )
    return found


def timing(work: Path) -> float:
    golden, target = work / "syn" / "golden", work / "syn" / "target"
    script = ROOT / "bench" / "make_synthetic_dump.py"
    for out, variant in ((golden, "golden"), (target, "target")):
        if not out.is_dir():
            extra = ["--variant", "target"] if variant == "target" else []
            subprocess.run(
                [sys.executable, str(script), "--layers", "256", "--out", str(out), *extra],
                check=True,
            )
    built_dir = work / "syn" / "built"
    built = sorted(built_dir.glob("*.vis.db")) if built_dir.is_dir() else []
    path = (
        built[0]
        if built
        else run_build(BuildOptions(target=target, golden=golden, output_dir=built_dir)).path
    )
    times = []
    for _ in range(3):
        start = time.perf_counter()
        file_diagnosis(path)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--no-cases", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if not args.no_cases:
        right = 0
        rows = cases(args.work)
        for name, paths, check in rows:
            found = diagnosis_of(paths)
            ok = check(found)
            right += ok
            print(f"{'right' if ok else 'WRONG'}  {name}")
            print(f"       graphboard: {found.summary}")
            print(
                f"       msprobe graph_visualize -oc, first critical: {_first_critical(paths, args.work / 'scratch')}"
            )
        print(f"{right}/{len(rows)} right ({100 * right / len(rows):.0f}%)")
    print(f"diagnose on a 27k-record compare: {timing(args.work):.2f} s (best of 3)")


if __name__ == "__main__":
    main()
