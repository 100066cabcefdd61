"""The localisation benchmark (issue 29): does the first introduced error name the injected
fault? graphboard (dtype-aware rules and msprobe's rules) and msprobe's own graph_visualize,
side by side, in one run, on real models dumped by msprobe's dumper (bench/localisation/).

python bench/bench_localisation.py                  # dump what is missing, build, print the table
python bench/bench_localisation.py --record         # also write bench/results/localisation.md (--out)
python bench/bench_localisation.py --dumps-only     # make the dumps (targets, goldens, references)
python bench/bench_localisation.py --cases llama-bf16   # only cases whose name contains this
python bench/bench_localisation.py --reference same # a third graphboard build, -nr REFERENCE
python bench/bench_localisation.py --reference noisy   # ... REFERENCE with the other attention
python bench/bench_localisation.py --dumper graphboard  # dumps by graphboard's probe instead

Dumps are cached in ``--data`` (default /work/data/loc, or $GRAPHBOARD_LOC_DATA), by dumper
and dump name, so a re-run only re-builds; builds go to a fresh folder per run. The
graphboard builds run ``graph_build`` of this Python's environment, so
``PYTHONPATH=<checkout>/backend`` evaluates any checkout's rules against the same dumps.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from harness import msprobe_binary  # noqa: E402
from localisation import cases as case_list  # noqa: E402
from localisation.classify import (  # noqa: E402
    MISSED,
    OUTCOMES,
    answer,
    classify,
    parents,
    precision_mismatches,
)

SCRIPT = BENCH / "localisation" / "model_script.py"
RESULTS = BENCH / "results" / "localisation.md"
DATA = Path(os.environ.get("GRAPHBOARD_LOC_DATA", "/work/data/loc"))
GRAPH_BUILD = str(Path(sys.executable).with_name("graph_build"))
# Columns: (label, which build, rule set)
TOOLS = [
    ("gb dtype-aware", "gb", "dtype-aware"),
    ("gb msprobe rules", "gb", "msprobe"),
    ("msprobe", "ms", "msprobe"),
]
REFERENCE_TOOL = ("gb -nr dtype-aware", "nr", "dtype-aware")
# What the -nr column can show, by the reference it was given (said in the recorded table).
REFERENCE_NOTES = {
    "same": [
        "-nr REFERENCE: the target's precision and kernels without the fault. On one CPU that "
        "run is bit for bit the target of a noise-only case, so 0 errors there is by "
        "construction, and a fault case's target departs from it by the fault alone.",
        "",
    ],
    "noisy": [
        "-nr REFERENCE: the target's precision without the fault, with the other attention "
        "kernel (eager <-> sdpa; the project's own model, which has one, with its own): a "
        "reference that differs from the target by kernel noise, as another device's run would; "
        "but unlike another device's run, its attention makes other calls (one fused "
        "scaled_dot_product_attention against matmul / softmax, no mask tensor against one), "
        "so inside attention the reference has no twin of the target's calls.",
        "",
    ],
}
# Cases build in parallel (separate processes); their files are read one at a time, as the
# reader's caches are the process's own.
READING = threading.Lock()


def dump_path(data: Path, dumper: str, dump: case_list.Dump) -> Path:
    return data / "dumps" / dumper / dump.name


def make_dump(data: Path, dumper: str, dump: case_list.Dump) -> Path:
    """The dump, made once: into a temporary folder renamed when the script succeeded."""
    out = dump_path(data, dumper, dump)
    if (out / "step0").is_dir():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    if dumper == "msprobe":
        binary = msprobe_binary()
        if binary is None:
            raise SystemExit("msprobe not found: set GRAPHBOARD_MSPROBE_BIN")
        python = str(Path(binary).with_name("python"))
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".making-") as scratch:
        made = Path(scratch) / "dump"
        command = [python, str(SCRIPT), str(made), *dump.script_arguments(), "--dumper", dumper]
        result = subprocess.run(
            command, cwd=scratch, capture_output=True, text=True, check=False, timeout=900
        )
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
        try:
            made.rename(out)
        except OSError:  # another run made it meanwhile: keep theirs, drop ours
            if not (out / "step0").is_dir():
                raise
    return out


def rank_folder(dump: Path) -> Path:
    """msprobe's graph_visualize wants the rank (or proc) folder of a one-rank dump."""
    (folder,) = [path for path in (dump / "step0").iterdir() if path.is_dir()]
    return folder


def run(command: list[str], out: Path) -> Path:
    built = sorted(out.glob("*.vis.db")) if out.is_dir() else []
    if len(built) == 1:  # --builds: judged again, not built again
        return built[0]
    out.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    if result.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    (made,) = out.glob("*.vis.db")
    return made


@dataclass
class Result:
    case: case_list.Case
    answers: dict[str, str | None] = field(default_factory=dict)  # tool -> first error
    inherited: set[str] = field(default_factory=set)  # tools whose errors none introduces
    outcomes: dict[str, str] = field(default_factory=dict)  # tool -> right / near / ...
    errors: dict[str, int] = field(default_factory=dict)  # tool -> error nodes
    mismatches: list[tuple[str, object, object]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # build -> wall seconds


def evaluate(
    case: case_list.Case,
    data: Path,
    builds: Path,
    reference: str | None,
    dumper: str = "msprobe",
) -> Result:
    target = dump_path(data, dumper, case.target)
    golden = dump_path(data, dumper, case.golden)
    out = builds / case.name
    result = Result(case)
    commands = {
        "gb": [GRAPH_BUILD, "-tp", str(target), "-gp", str(golden), "-o", str(out / "gb")],
        "ms": [
            str(msprobe_binary()),
            "graph_visualize",
            "-tp",
            str(rank_folder(target)),
            "-gp",
            str(rank_folder(golden)),
            "-o",
            str(out / "ms"),
        ],
    }
    if reference:
        chosen = case.noisy_reference if reference == "noisy" else case.reference
        noise = dump_path(data, dumper, chosen)
        commands["nr"] = [*commands["gb"][:5], "-nr", str(noise), "-o", str(out / "nr")]
    files: dict[str, Path] = {}
    for build, command in commands.items():
        started = time.perf_counter()
        files[build] = run(command, out / build)
        result.seconds[build] = time.perf_counter() - started
    tools = [*TOOLS, REFERENCE_TOOL] if reference else TOOLS
    with READING:
        judge(result, files, tools)
    return result


def judge(result: Result, files: dict[str, Path], tools: list[tuple[str, str, str]]) -> None:
    case = result.case
    for label, build, rules in tools:
        found = answer(files[build], rules, files[build].parent.parent / "reader-cache")
        result.answers[label] = found.first_error
        if not found.introduced:
            result.inherited.add(label)
        result.errors[label] = found.errors
        if case.is_fault:
            assert case.target.module is not None
            result.outcomes[label] = classify(
                found.first_error, parents(files[build]), case.target.module, case.backward_only
            )
    result.mismatches = precision_mismatches(files["gb"], files["ms"])


def needed_dumps(cases: Iterable[case_list.Case]) -> list[case_list.Dump]:
    """Goldens and references first (every case needs one), then the targets."""
    found: dict[str, case_list.Dump] = {}
    for case in cases:
        for dump in (case.golden, case.reference, case.noisy_reference):
            found.setdefault(dump.name, dump)
    for case in cases:
        found.setdefault(case.target.name, case.target)
    return list(found.values())


def table(results: list[Result], tools: list[str]) -> list[str]:
    lines = ["## Faults: right / near / wrong / missed per precision group", ""]
    lines.append("| group | faults | " + " | ".join(tools) + " |")
    lines.append("|---|---|" + "---|" * len(tools))
    for group in case_list.GROUPS:
        faults = [r for r in results if r.case.is_fault and r.case.group == group]
        if not faults:
            continue
        cells = []
        for tool in tools:
            counted = Counter(r.outcomes[tool] for r in faults)
            cells.append(" / ".join(str(counted[outcome]) for outcome in OUTCOMES))
        lines.append(f"| {group} | {len(faults)} | " + " | ".join(cells) + " |")
    lines += ["", "## Noise-only migrations: error nodes", ""]
    lines.append("| case | " + " | ".join(tools) + " |")
    lines.append("|---|" + "---|" * len(tools))
    for result in results:
        if not result.case.is_fault:
            lines.append(
                f"| {result.case.name} | "
                + " | ".join(str(result.errors[tool]) for tool in tools)
                + " |"
            )
    lines += ["", "## Every fault case: outcome (first introduced error)", ""]
    lines.append("| case | faulty module | " + " | ".join(tools) + " |")
    lines.append("|---|---|" + "---|" * len(tools))
    for result in results:
        if result.case.is_fault:
            cells = [
                result.outcomes[tool]
                if result.outcomes[tool] == MISSED
                else f"{result.outcomes[tool]} ({result.answers[tool]})"
                + (" *" if tool in result.inherited else "")
                for tool in tools
            ]
            module = result.case.target.module
            back = " (backward)" if result.case.backward_only else ""
            lines.append(f"| {result.case.name} | {module}{back} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "\\* no node introduces an error (each error node has an error among its inputs): "
        "the answer is the first error node in node order.",
        "",
        "## graphboard's msprobe rules against msprobe's precision_index, node by node",
        "",
    ]
    differing = [r for r in results if r.mismatches]
    lines.append(
        f"{len(results) - len(differing)} of {len(results)} cases agree on every target node."
    )
    for result in differing:
        lines.append("")
        lines.append(f"- {result.case.name}: {len(result.mismatches)} node(s) (node: ours, theirs)")
        for name, ours, theirs in result.mismatches[:10]:
            lines.append(f"  - {name}: {ours}, {theirs}")
        if len(result.mismatches) > 10:
            lines.append(f"  - ... {len(result.mismatches) - 10} more")
    return lines


def checkout() -> str:
    """The graphboard that built the files: its backend folder and that folder's commit."""
    import graphboard

    backend = Path(graphboard.__file__).resolve().parents[1]
    commit = subprocess.run(
        ["git", "-C", str(backend), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{backend} at {commit[:80] or 'an unknown commit'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cases", help="only the cases whose name contains this")
    parser.add_argument("--dumps-only", action="store_true")
    parser.add_argument(
        "--dumper", choices=("msprobe", "graphboard"), default="msprobe", help="whose dumps"
    )
    parser.add_argument(
        "--reference",
        choices=("same", "noisy"),
        help="also build with -nr: the target's precision and kernels without the fault "
        "('same'), or with the other attention kernel ('noisy')",
    )
    parser.add_argument("--jobs", type=int, default=3, help="dumps made, cases built at once")
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where --record writes")
    parser.add_argument(
        "--builds", type=Path, help="a former run's builds folder: judge its files again"
    )
    args = parser.parse_args()
    chosen = [c for c in case_list.all_cases() if not args.cases or args.cases in c.name]
    dumps = needed_dumps(chosen)
    started = time.perf_counter()
    failed: list[str] = []

    def made(dump: case_list.Dump) -> None:
        try:
            make_dump(args.data, args.dumper, dump)
        except SystemExit as error:  # the others go on; all failures are listed at the end
            failed.append(f"{dump.name}: {error}")

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(made, dumps))
    if failed:
        raise SystemExit("\n".join(failed))
    print(f"{len(dumps)} dumps ready in {time.perf_counter() - started:.0f} s", flush=True)
    if args.dumps_only:
        return
    builds = args.builds or args.data / "builds" / time.strftime("%Y%m%d-%H%M%S")

    def evaluated(case: case_list.Case) -> Result:
        result = evaluate(case, args.data, builds, args.reference, args.dumper)
        shown = ", ".join(
            f"{tool}: {result.outcomes.get(tool, '')} {result.errors[tool]} err"
            for tool in result.errors
        )
        print(f"{case.name}: {shown}; {len(result.mismatches)} index mismatches", flush=True)
        return result

    started = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(evaluated, chosen))
    seconds = time.perf_counter() - started
    tools = [label for label, _build, _rules in TOOLS]
    if args.reference:
        tools.append(REFERENCE_TOOL[0])
    lines = table(results, tools)
    print("\n".join(lines))
    if args.record:
        header = [
            "# The localisation benchmark (bench/bench_localisation.py)",
            "",
            *REFERENCE_NOTES.get(args.reference or "", []),
            f"{sum(r.case.is_fault for r in results)} faults and "
            f"{sum(not r.case.is_fault for r in results)} noise-only migrations, dumped by "
            f"{args.dumper}'s dumper; every golden is the family in fp32 with eager "
            "attention. Cells of the first table: right / near / wrong / missed.",
            "",
            f"graphboard: {checkout()}; transformers {version('transformers')} (dumps); "
            + (
                f"files of {args.builds}, judged again (its builds reused where present, "
                f"{seconds:.0f} s wall)."
                if args.builds
                else f"all builds of this run: {seconds:.0f} s wall, {args.jobs} cases at once."
            ),
            "",
        ]
        args.out.write_text("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
