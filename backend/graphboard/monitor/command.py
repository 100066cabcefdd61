"""``graphboard monitor -tp TARGET -gp GOLDEN -o OUT``: two runs' training-state monitor data
(the monitor's folders of ``<time>-rank<r>-<id>/`` CSVs, or msprobe's ``.trend.db``) compared
step by step; writes ``OUT/monitor_<time>.trend.db`` (msprobe's trend tables of the target,
graphboard's comparison beside them) and prints a summary line and the first departure
(``--json``: the whole report). Exit 0 without a departure, 1 with one, 2 on bad input."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from graphboard.errors import GraphboardError
from graphboard.monitor.compare import compare_runs, read_run
from graphboard.monitor.dump_config import dump_config
from graphboard.monitor.store import save_report


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "monitor",
        help="compare two runs' training-state monitor data step by step (first departure)",
        description=__doc__.split(":", 1)[1].strip() if __doc__ else None,
    )
    parser.add_argument("-tp", "--target_path", type=Path, required=True, help="the target run")
    parser.add_argument("-gp", "--golden_path", type=Path, required=True, help="the golden run")
    parser.add_argument("-o", "--output_path", type=Path, required=True, help="output folder")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--dump-config",
        type=Path,
        help="also write msprobe's dump config.json for the first departure's step and modules",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        report = compare_runs(read_run(args.target_path), read_run(args.golden_path))
        path = save_report(report, args.output_path)
    except GraphboardError as error:  # 2, not the 1 that means "a departure"
        print(f"graphboard monitor: error: {error}", file=sys.stderr)
        return 2
    if args.dump_config is not None and report.first is not None:
        args.dump_config.write_text(json.dumps(dump_config(report), indent=2) + "\n")
    if args.json:
        print(json.dumps({**report.as_json(), "output": str(path)}))
    else:
        print(f"graphboard monitor: {report.summary()}")
        print(f"graphboard monitor: wrote {path}", file=sys.stderr)
    return 0 if report.first is None else 1
