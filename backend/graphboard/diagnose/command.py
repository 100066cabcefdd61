"""``graphboard diagnose PATH...``: where inf/NaN was born, which op is not deterministic, or
where the first error starts, and the msprobe config.json for the next dump.

PATH is a .vis.db, one dump (built here, with the overflow check) or two dumps (compared here:
the first as target, the second as golden; two runs of one configuration are read as a
determinism check). Exit codes as ``graphboard verdict``: 0 no origin found; 1 an answer (an
origin, a non-deterministic op, an error); 2 no answer (bad input), with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from graphboard.ci.report import NO_VERDICT, PASSED, TOO_MANY_ERRORS
from graphboard.diagnose.answer import MODES, Diagnosis, diagnose
from graphboard.errors import GraphboardError
from graphboard.store.reader import open_vis_db

PROG = "graphboard diagnose"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "diagnose",
        help="where inf/NaN was born, the first non-deterministic op, and what to dump next",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument(
        "paths", type=Path, nargs="+", metavar="PATH", help="a .vis.db, a dump, or two dumps"
    )
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser.add_argument(
        "--next-config",
        type=Path,
        metavar="FILE",
        help="write msprobe's config.json for the next dump",
    )
    parser.add_argument(
        "--mode", choices=MODES, default="auto", help="ask one question only (default: in turn)"
    )
    parser.set_defaults(run=run)


def file_diagnosis(path: Path, mode: str = "auto", cache_dir: Path | None = None) -> Diagnosis:
    """The answer of one .vis.db; an msprobe file's derived columns go to a scratch folder."""
    if cache_dir is None:
        with tempfile.TemporaryDirectory(prefix="graphboard-diagnose-") as scratch:
            return file_diagnosis(path, mode, Path(scratch))
    with open_vis_db(path, cache_dir) as db:
        return diagnose(db, mode)


def _built(paths: list[Path], scratch: Path) -> Path:
    from graphboard.pipeline import BuildOptions, run_build

    for path in paths:
        if not path.is_dir():
            raise GraphboardError(f"{path}: not a .vis.db nor a dump folder")
    golden = paths[1] if len(paths) == 2 else None
    options = BuildOptions(target=paths[0], golden=golden, output_dir=scratch, overflow_check=True)
    return run_build(options).path


def diagnosis_of(paths: list[Path], mode: str = "auto") -> Diagnosis:
    if len(paths) > 2:
        raise GraphboardError("give one .vis.db, one dump, or two dumps")
    if len(paths) == 1 and paths[0].is_file():
        return file_diagnosis(paths[0], mode)
    if not all(path.exists() for path in paths):
        missing = next(path for path in paths if not path.exists())
        raise GraphboardError(f"{missing}: no such file or folder")
    with tempfile.TemporaryDirectory(prefix="graphboard-diagnose-") as scratch:
        built = _built(paths, Path(scratch))
        return file_diagnosis(built, mode, Path(scratch))


def write_config(path: Path, config: dict[str, Any]) -> None:
    """Write next to a temporary name and rename: a half-written config is never left."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        temporary.replace(path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise GraphboardError(f"{path}: cannot write the config: {error.strerror}") from None


def answer_lines(found: Diagnosis) -> list[str]:
    lines = [f"graphboard diagnose: {found.summary}"]
    for rank in found.ranks:
        detail = f"{rank.node} ({rank.kind})" if rank.node else "no inf/NaN"
        via = f", first affected collective {rank.collective}" if rank.collective else ""
        lines.append(f"  rank {rank.rank}: {rank.state}: {detail}{via}")
    for item in found.evidence:
        shown = ", ".join(item.kinds) or "finite"
        note = f" ({item.note})" if item.note else ""
        lines.append(f"  {item.key}: {shown}; max {item.max}, min {item.min}, {item.dtype}{note}")
    if found.by_design:
        lines.append(f"  passed over (inf made on purpose): {', '.join(found.by_design)}")
    lines += [f"  note: {note}" for note in found.notes]
    if found.advice:
        lines.append(f"  next: {found.advice}")
    return lines


def run(args: argparse.Namespace) -> int:
    try:
        found = diagnosis_of(list(args.paths), args.mode)
        if args.next_config is not None:
            if found.next_config is None:
                print(
                    f"{PROG}: no next dump to suggest; {args.next_config} not written",
                    file=sys.stderr,
                )
            else:
                write_config(args.next_config, found.next_config)
    except GraphboardError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return NO_VERDICT
    if args.json:
        print(json.dumps(found.as_json(), indent=2))
    else:
        print("\n".join(answer_lines(found)))
    return TOO_MANY_ERRORS if found.found else PASSED
