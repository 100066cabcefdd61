"""``graphboard verdict FILE.vis.db``: the verdict of a finished job, without a server.

It reads the file as the server's verdict endpoint does (graphboard's files and msprobe's),
and prints the same lines as ci-check, or with ``--json`` the endpoint's JSON. Exit codes as
ci-check's: 0 the errors are within ``--max-errors``; 1 they are not; 2 no verdict (a missing,
unreadable or corrupt file, a folder, or no graph at ``--step`` / ``--rank``), with one line on
stderr. A folder is not judged file by file (one exit code could not say which file failed):
the error names the .vis.db files under it to choose from. ``--json``'s ``job_id`` is null, as
a file judged on its own belongs to no job. The viewer URL is printed as one to open only
when a server is serving the file there; otherwise the line says how to start one.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from graphboard.ci.report import (
    NO_VERDICT,
    add_max_errors,
    add_rules,
    exit_code,
    findings_lines,
    verdict_lines,
)
from graphboard.errors import GraphboardError
from graphboard.serve_address import configured_url
from graphboard.store.reader import open_vis_db
from graphboard.verdict.judge import verdict
from graphboard.verdict.models import VerdictOut
from graphboard.viewer_link import view_line

PROG = "graphboard verdict"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "verdict",
        help="print a .vis.db's verdict (as a finished job's) and exit 0/1/2 as ci-check does",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("file", type=Path, help="a .vis.db (graphboard's or msprobe's)")
    add_max_errors(parser)
    parser.add_argument("--step", type=int, help="judge this step's graphs only")
    parser.add_argument("--rank", type=int, help="judge this rank's graphs only")
    parser.add_argument(
        "--json", action="store_true", help="print GET /api/jobs/{id}/verdict's JSON"
    )
    add_rules(parser)
    parser.set_defaults(run=run)


def file_verdict(
    path: Path,
    *,
    step: int | None = None,
    rank: int | None = None,
    job_id: str | None = None,
    cache_dir: Path | None = None,
    rules: str | None = None,
    diagnose_without_overflow: bool = True,
) -> VerdictOut:
    """The verdict of one .vis.db, its graph id that of ``graphboard serve --data-dir`` on the
    file's own folder. An msprobe file's derived columns go to ``cache_dir``, by default a
    temporary folder: reading never writes next to the file."""
    graph = path.name.removesuffix(".vis.db")
    if cache_dir is None:
        with tempfile.TemporaryDirectory(prefix="graphboard-verdict-") as scratch:
            return file_verdict(
                path,
                step=step,
                rank=rank,
                job_id=job_id,
                cache_dir=Path(scratch),
                rules=rules,
                diagnose_without_overflow=diagnose_without_overflow,
            )
    try:
        with open_vis_db(path, cache_dir) as db:
            return verdict(
                db,
                job_id,
                graph,
                step=step,
                rank=rank,
                rules=rules,
                diagnose_without_overflow=diagnose_without_overflow,
            )
    except sqlite3.Error as error:  # raised before the reader could name the file
        raise GraphboardError(f"{path}: not a readable .vis.db: {error}") from None


def summary_lines(
    path: Path, server: str, cache_dir: Path | None = None, *, serving: bool = False
) -> list[str]:
    """What a compare found, with the URL that opens it on ``server``, as the demo and
    graph_build print it: to open when ``serving`` (the demo, about to serve it on a port it
    checked free) or when that server is found serving it, else with how to start one."""
    # the diagnosis only where the target overflows: elsewhere it would add about 1 s to a
    # 27k-record compare for a line the summary does not print (the first error is there)
    found = file_verdict(path, cache_dir=cache_dir, diagnose_without_overflow=False).model_dump(
        mode="json", by_alias=True
    )
    view = None if serving else view_line(server, found["graph"], path, found["url"])
    return findings_lines(found, server, view)


FOLDER_LISTED = 10  # .vis.db files a folder's error names
FOLDER_SCANNED = 10_000  # entries looked at for them: a folder such as / costs no more


def folder_error(folder: Path) -> str:
    """The error for a folder given where a file was expected: the .vis.db files under it
    (hidden folders skipped, as the server skips them), or that it has none."""
    found: list[Path] = []
    scanned = 0
    for root, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        found += [Path(root, name) for name in sorted(files) if name.endswith(".vis.db")]
        scanned += len(folders) + len(files)
        if len(found) > FOLDER_LISTED or scanned >= FOLDER_SCANNED:
            break
    if not found:
        looked = "" if scanned < FOLDER_SCANNED else f" in the first {FOLDER_SCANNED} entries"
        return f"{folder}: a folder, not a .vis.db, and none is under it{looked}"
    shown = ", ".join(str(path.relative_to(folder)) for path in found[:FOLDER_LISTED])
    more = " and more" if len(found) > FOLDER_LISTED else ""
    return f"{folder}: a folder, not a .vis.db; give one of the files under it: {shown}{more}"


def run(args: argparse.Namespace) -> int:
    path: Path = args.file
    try:
        if args.max_errors < 0:
            raise GraphboardError("--max-errors must be 0 or more")
        if path.is_dir():
            raise GraphboardError(folder_error(path))
        if not path.is_file():
            raise GraphboardError(f"{path}: no such file")
        found = file_verdict(path, step=args.step, rank=args.rank, rules=args.rules)
    except GraphboardError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return NO_VERDICT
    shown = found.model_dump(mode="json", by_alias=True)
    if args.json:
        print(found.model_dump_json(by_alias=True, indent=2))
    else:
        server = configured_url()
        view = view_line(server, shown["graph"], path, shown["url"])
        print("\n".join(verdict_lines(shown, server, args.max_errors, view)))
    return exit_code(shown, args.max_errors)
