"""``graphboard ci-check``: upload dumps, wait for the build, judge the verdict.

Exit codes: 0 the errors are within ``--max-errors``; 1 they are not; 2 no verdict (the
build failed, the server refused the upload or the token, it could not be reached, or the
job did not finish within ``--timeout``). Every failure is one line on stderr. With
``--monitor`` the folders are two runs' training-state monitor output, compared as
``graphboard monitor`` does: 0 no departure, 1 a departure (the first is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphboard.ci.client import CiError, Client
from graphboard.ci.pack import PackError, pack
from graphboard.ci.report import (
    NO_VERDICT,
    PASSED,
    TOO_MANY_ERRORS,
    add_max_errors,
    add_rules,
    exit_code,
    monitor_lines,
    passes,
    verdict_lines,
)

FIRST_POLL, MAX_POLL = 0.5, 5.0
TOKEN_ENV = "GRAPHBOARD_TOKEN"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "ci-check",
        help="upload dumps to a graphboard server, build them there and check the verdict",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("--server", required=True, help="the server's URL (http://host:8000)")
    parser.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV),
        help=f"bearer token from `graphboard token create` (default: ${TOKEN_ENV})",
    )
    parser.add_argument("--target", required=True, type=Path, help="target dump folder")
    parser.add_argument("--golden", type=Path, help="golden dump folder: compare against it")
    add_max_errors(parser)
    parser.add_argument("--fuzzy-match", action="store_true", help="as graph_build -fm")
    parser.add_argument("--overflow-check", action="store_true", help="as graph_build -oc")
    parser.add_argument("--layer-mapping", type=Path, help="as graph_build -lm FILE")
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds to wait for the build (3600)"
    )
    parser.add_argument(
        "--monitor",
        action="store_true",
        help="the folders are msprobe training-state monitor output (TrainerMon): compare "
        "the runs (graphboard monitor) and fail on a departure",
    )
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    add_rules(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(run=run)


def _say(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        print(f"ci-check: {text}", file=sys.stderr, flush=True)


def _check_inputs(args: argparse.Namespace) -> None:
    if not args.token:
        raise CiError(f"no token: pass --token or set {TOKEN_ENV}")
    for flag, folder in (("--target", args.target), ("--golden", args.golden)):
        if folder is not None and not folder.is_dir():
            raise CiError(f"{flag} {folder}: no such folder")
    if args.layer_mapping is not None and not args.layer_mapping.is_file():
        raise CiError(f"--layer-mapping {args.layer_mapping}: no such file")
    if args.golden is None and (args.fuzzy_match or args.layer_mapping is not None):
        raise CiError("--fuzzy-match and --layer-mapping need --golden")
    if args.monitor and args.golden is None:
        raise CiError("--monitor needs --golden (the run to compare against)")
    if args.monitor and (args.fuzzy_match or args.overflow_check or args.layer_mapping):
        raise CiError("--fuzzy-match, --overflow-check and --layer-mapping are for dumps")
    if args.max_errors < 0:
        raise CiError("--max-errors must be 0 or more")


def wait_for(
    client: Client,
    job_id: str,
    timeout: float,
    on_progress: Callable[[dict[str, Any]], None],
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Poll the job until it ends, every 0.5 s at first and backing off to 5 s."""
    deadline = clock() + timeout
    delay = FIRST_POLL
    while True:
        job = client.job(job_id)
        on_progress(job)
        if job["status"] in ("done", "failed"):
            return job
        if clock() + delay > deadline:
            raise CiError(
                f"job {job_id} did not finish within {timeout:g}s "
                f"(still {job['status']} at {job['progress']}%)"
            )
        sleep(delay)
        delay = min(MAX_POLL, delay * 1.5)


def _upload(args: argparse.Namespace, client: Client) -> str:
    with tempfile.TemporaryDirectory(prefix="graphboard-ci-") as scratch:
        archives: dict[str, Path] = {}
        for side, folder in (("target", args.target), ("golden", args.golden)):
            if folder is None:
                continue
            archive = Path(scratch) / f"{side}.tar.gz"
            size = pack(folder, archive)
            _say(args, f"packed {folder} ({size / 1e6:.1f} MB)")
            archives[side] = archive
        if args.monitor:
            created = client.upload_monitor(archives["target"], archives["golden"])
        else:
            created = client.upload(
                archives["target"],
                archives.get("golden"),
                args.layer_mapping,
                fuzzy_match=args.fuzzy_match,
                overflow_check=args.overflow_check,
            )
    job_id = str(created["job_id"])
    _say(args, f"uploaded; job {job_id}")
    return job_id


def run(args: argparse.Namespace) -> int:
    try:
        _check_inputs(args)
        with Client(args.server, args.token) as client:
            client.check_token()
            job_id = _upload(args, client)
            shown = {"progress": -1}

            def progress(job: dict[str, Any]) -> None:
                if job["progress"] != shown["progress"] and job["status"] != "failed":
                    shown["progress"] = job["progress"]
                    _say(args, f"{job['status']} {job['progress']}% {job.get('message') or ''}")

            job = wait_for(client, job_id, args.timeout, progress)
            if job["status"] == "failed":
                raise CiError(f"the build failed: {job.get('error') or 'no reason given'}")
            verdict = client.verdict(job_id, args.rules)
    except (CiError, PackError) as error:
        print(f"ci-check: error: {error}", file=sys.stderr)
        return NO_VERDICT
    except (KeyError, TypeError, ValueError) as error:  # a server answering something else
        print(f"ci-check: error: unexpected answer from {args.server}: {error!r}", file=sys.stderr)
        return NO_VERDICT
    if args.monitor:
        return _monitor_answer(args, verdict)
    if args.json:
        report = {
            "passed": passes(verdict, args.max_errors),
            "max_errors": args.max_errors,
            "url": args.server.rstrip("/") + verdict["url"],
            "verdict": verdict,
        }
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(verdict_lines(verdict, args.server, args.max_errors)))
    return exit_code(verdict, args.max_errors)


def _monitor_answer(args: argparse.Namespace, verdict: dict[str, Any]) -> int:
    departed = verdict["first_departure"] is not None
    if args.json:
        report = {
            "passed": not departed,
            "url": args.server.rstrip("/") + verdict["url"],
            "verdict": verdict,
        }
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(monitor_lines(verdict, args.server)))
    return TOO_MANY_ERRORS if departed else PASSED
