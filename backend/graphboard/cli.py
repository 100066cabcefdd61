"""Command lines: ``graph_build`` (msprobe graph_visualize compatible) and ``graphboard``."""

from __future__ import annotations

import argparse
import functools
import json
import signal
import stat
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from graphboard import __version__
from graphboard.errors import GraphboardError
from graphboard.executor import Executor
from graphboard.progress import ProgressBar, ProgressCallback, silent
from graphboard.stopping import exit_status, stop_signal, stop_signals_raise

if TYPE_CHECKING:  # the server's settings load only for serve and demo
    from graphboard.server.settings import Settings


def _add_build_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-tp",
        "--target_path",
        required=True,
        help="target dump (the -tp side; msprobe's files call it NPU)",
    )
    parser.add_argument(
        "-gp",
        "--golden_path",
        help="golden dump (the -gp side; msprobe's files call it Bench); turns on compare",
    )
    parser.add_argument(
        "-o", "--output_path", required=True, help="folder for the .vis.db (created if missing)"
    )
    parser.add_argument(
        "-nr",
        "--noise_reference",
        help="noise reference dump: the golden configuration run in the target's precision and "
        "kernels; the dtype-aware verdicts judge the target against the noise it measures",
    )
    parser.add_argument(
        "-lm",
        "--layer_mapping",
        nargs="?",
        const=True,
        default=None,
        help="match renamed modules: a YAML {Class: {target attr: golden attr}}, or no value for class-agnostic paths",
    )
    parser.add_argument(
        "-oc", "--overflow_check", action="store_true", help="mark inf/nan overflow levels"
    )
    parser.add_argument(
        "-fm",
        "--fuzzy_match",
        action="store_true",
        help="match modules by name, their APIs by call order",
    )
    parser.add_argument(
        "-tensor_log",
        "--is_print_compare_log",
        action="store_true",
        help="accepted for msprobe compatibility",
    )
    parser.add_argument(
        "-progress_log",
        "--is_print_progress_log",
        action="store_true",
        help='print PROGRESS: {"current_progress": n, ...} lines on stdout, as msprobe does',
    )
    parser.add_argument(
        "--rank_size",
        nargs="+",
        type=int,
        help="merge the ranks of a parallel run: its rank count (two values, target golden, for a compare)",
    )
    parser.add_argument("--tp", nargs="+", type=int, help="tensor-parallel size (with --rank_size)")
    parser.add_argument(
        "--pp", nargs="+", type=int, help="pipeline-parallel size (with --rank_size)"
    )
    parser.add_argument("--vpp", nargs="+", type=int, help="virtual pipeline size (default 1)")
    parser.add_argument("--order", nargs="+", help="Megatron's rank order (default tp-cp-ep-dp-pp)")
    parser.add_argument("--cp", nargs="+", type=int, help=argparse.SUPPRESS)  # refused above 1
    parser.add_argument("--ep", nargs="+", type=int, help=argparse.SUPPRESS)  # refused above 1
    parser.add_argument(
        "--file_type",
        choices=("db", "json"),
        default="db",
        help="output type (json: a merged build as msprobe's dump folders)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--workers",
        type=int,
        help="processes for the build: several ranks run in a pool of this many, and a lone "
        "compare reads its golden side in a second process unless 1 (default: one per core)",
    )
    parser.add_argument(
        "--name", help="output file name (default build_/compare_<timestamp>.vis.db)"
    )
    parser.add_argument(
        "--auto-match",
        type=float,
        metavar="C",
        help="after a compare, accept suggest-matches' proposals at or above confidence C "
        "as manual matches (undo in the viewer)",
    )


def _progress_log(fraction: float, _message: str) -> None:
    line = {
        "current_progress": int(fraction * 100),
        "process_running": fraction < 1.0,
        "error_msg": [],
    }
    print(f"PROGRESS: {json.dumps(line)}", flush=True)


def _run_build(args: argparse.Namespace, executor: Executor | None = None) -> int:
    """graph_build (and ``graphboard build``), run by ``executor`` (by default one that may
    start processes and frees what its tasks built as it goes)."""
    from graphboard.pipeline import BuildOptions, run_build

    executor = executor or Executor()
    from graphboard.merge.flags import parallel_options

    parallel = parallel_options(
        rank_size=args.rank_size,
        tp=args.tp,
        pp=args.pp,
        vpp=args.vpp,
        order=args.order,
        cp=args.cp,
        ep=args.ep,
        compare=bool(args.golden_path),
    )
    export = False
    if args.file_type == "json":  # the export's modules only then: a build starts sooner
        from graphboard.pipeline.export import json_export_wanted

        export = json_export_wanted(parallel is not None, bool(args.golden_path))
    if args.file_type == "json" and not export:
        print(
            "graph_build: warning: --file_type json is only for merged builds (--rank_size --tp"
            " --pp); writing a db",
            file=sys.stderr,
        )
    layer_mapping: Path | bool | None = None
    if args.layer_mapping is True:
        layer_mapping = True
    elif args.layer_mapping:
        layer_mapping = Path(args.layer_mapping)
    if layer_mapping is not None and not args.golden_path:
        raise GraphboardError("-lm needs a golden dump (-gp)")
    if args.fuzzy_match and not args.golden_path:
        raise GraphboardError("-fm needs a golden dump (-gp)")
    if args.noise_reference and not args.golden_path:
        raise GraphboardError("-nr needs a golden dump (-gp)")
    if args.auto_match is not None and not (args.golden_path and 0 <= args.auto_match <= 1):
        raise GraphboardError("--auto-match needs a golden dump (-gp) and a confidence from 0 to 1")
    if args.auto_match is not None:
        from graphboard.pipeline.output import current_umask

        if current_umask() & stat.S_IWUSR:  # checked before any work: nothing is written
            raise GraphboardError(
                f"--auto-match: the umask {current_umask():04o} makes the new .vis.db "
                "read-only, so no match could be saved in it; build under a umask that lets "
                "its owner write (umask 022), or leave out --auto-match"
            )
    options = BuildOptions(
        target=Path(args.target_path),
        golden=Path(args.golden_path) if args.golden_path else None,
        output_dir=Path(args.output_path),
        overflow_check=args.overflow_check,
        fuzzy_match=args.fuzzy_match,
        layer_mapping=layer_mapping,
        workers=args.workers,
        output_name=args.name,
        command=sys.argv,
        parallel=parallel,
        noise_reference=Path(args.noise_reference) if args.noise_reference else None,
    )
    if export:  # msprobe's JSON export of the merged graphs instead of a db
        from graphboard.pipeline.export import run_export

        for folder in executor.call(run_export, options):
            print(folder)
        return 0
    progress: ProgressCallback
    if args.is_print_progress_log:
        progress = _progress_log
    elif args.quiet:
        progress = silent
    else:
        progress = ProgressBar()
    result = run_build(options, progress, executor)
    if args.auto_match is not None:
        from graphboard.suggest.apply import auto_match

        matched, refused = executor.call(auto_match, result.path, args.auto_match)
        if not args.quiet:
            print(
                f"graph_build: --auto-match {args.auto_match}: matched {matched} node(s), "
                f"{refused} refused",
                file=sys.stderr,
            )
    if not args.quiet:
        for warning in result.warnings:
            print(f"graph_build: warning: {warning}", file=sys.stderr)
        summary = (
            f"{result.graph_type} of {len(result.steps)} step(s) x {len(result.ranks)} rank(s)"
        )
        if result.mode is not None:
            summary += f", {result.mode.name.lower()} mode"
        print(
            f"graph_build: wrote {result.path} ({summary}, {result.seconds:.2f}s)", file=sys.stderr
        )
        if result.mode is not None:  # a compare: what it found, as the demo prints it
            from graphboard.serve_address import configured_url
            from graphboard.verdict_cli import summary_lines

            for line in summary_lines(result.path, configured_url()):
                print(f"graph_build:{line}", file=sys.stderr)
    print(result.path)
    return 0


def _serve_settings(args: argparse.Namespace) -> Settings:
    from graphboard.server.settings import Settings

    given = {"data_dir": args.data_dir, "host": args.host, "port": args.port}
    if getattr(args, "no_write_token", False):
        given["protect_writes"] = False
    return Settings(**{name: value for name, value in given.items() if value is not None})


SERVER_STARTUP_FAILED = 3  # uvicorn's status when the app or the socket fails to start


def _run_serve(args: argparse.Namespace) -> int:
    return _serve(_serve_settings(args))


def _serve(settings: Settings) -> int:
    from graphboard.viewer_link import check_port_free

    check_port_free(settings.host, settings.port)  # one line, not uvicorn's bind traceback
    import uvicorn

    from graphboard.serve_address import server_url
    from graphboard.server.app import create_app
    from graphboard.server.viewer_token import announce_when_started

    app = create_app(settings)
    server = uvicorn.Server(uvicorn.Config(app, host=settings.host, port=settings.port))
    announce_when_started(server, app, server_url(settings))  # the URL with the write token
    # uvicorn stops gracefully on SIGINT and SIGTERM (the app's shutdown stops its build
    # processes, which remove their files), then raises the signal again, for _guarded to
    # exit with; uvicorn.run would swallow that. A hang-up is made to stop it the same way.
    hung_up: list[int] = []

    def hang_up(signum: int, frame: FrameType | None) -> None:
        hung_up.append(signum)
        server.handle_exit(signum, frame)

    previous = signal.getsignal(signal.SIGHUP)
    if previous is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, hang_up)
    try:
        # a second server on this state folder refuses here, in one line (the runner's own
        # claim at start-up would fail inside uvicorn, with a traceback)
        with ExitStack() as claimed:
            if settings.broker_url is None:
                from graphboard.server.jobs.claim import claimed as state_claimed

                claimed.enter_context(state_claimed(settings.state_root))
            server.run()
    finally:
        if previous is not signal.SIG_IGN:
            signal.signal(signal.SIGHUP, previous)
    if hung_up:
        signal.raise_signal(signal.SIGHUP)
    return 0 if server.started else SERVER_STARTUP_FAILED


def _run_demo(args: argparse.Namespace) -> int:
    from graphboard.viewer_link import activate_hint, check_port_free

    if not args.no_serve:  # before a minute of work (torch's import too) and any URL
        args.data_dir = args.out
        wanted = _serve_settings(args)
        check_port_free(wanted.host, wanted.port)
    from graphboard.demo import build_demo
    from graphboard.serve_address import server_url
    from graphboard.verdict_cli import summary_lines

    result = build_demo(args.out)
    print(f"demo: wrote {result.path} ({result.seconds:.2f}s)")
    args.data_dir = result.path.parent
    settings = _serve_settings(args)
    # what the compare found, with the viewer URL that opens the first error's node
    found = summary_lines(
        result.path, server_url(settings), settings.cache_dir, serving=not args.no_serve
    )
    for line in found:
        print(f"demo:{line}")
    activate = activate_hint()
    if activate is not None:  # a fresh shell has no venv on PATH: the Tour's commands need it
        print(f"demo: graph_build and graphboard are not on PATH: run `{activate}` first")
    if args.no_serve:  # the summary's last line says how to serve it, or where it is served
        return 0
    print(f"demo: serving {args.data_dir} on {server_url(settings)} (Ctrl+C stops)")
    sys.stdout.flush()
    return _serve(settings)


def _guarded(prog: str, run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    # SIGTERM and SIGHUP unwind the command as Ctrl+C does: its cleanup runs for all three
    with stop_signals_raise():
        try:
            return run(args)
        except GraphboardError as error:
            print(f"{prog}: error: {error}", file=sys.stderr)
            return 1
        except KeyboardInterrupt as interrupt:
            print(f"{prog}: interrupted ({stop_signal(interrupt).name})", file=sys.stderr)
            return exit_status(interrupt)


def graph_build_main(argv: Sequence[str] | None = None, executor: Executor | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="graph_build",
        description="Build a .vis.db from one msprobe dump, or compare a target dump with a golden one.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"graphboard {__version__}")
    _add_build_arguments(parser)
    return _guarded(
        "graph_build", functools.partial(_run_build, executor=executor), parser.parse_args(argv)
    )


def graph_build_command() -> NoReturn:
    """The graph_build console script: graph_build_main for a process that ends with it, so
    its executor keeps what the build made for the exit and skips the interpreter's teardown
    (graphboard/executor.py)."""
    executor = Executor(ends_process=True)
    executor.exit(graph_build_main(executor=executor))


def graphboard_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="graphboard", description="graphboard: compare runs layer by layer."
    )
    parser.add_argument("--version", action="version", version=f"graphboard {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="same as graph_build", allow_abbrev=False)
    _add_build_arguments(build)
    build.set_defaults(run=_run_build)
    serve = commands.add_parser(
        "serve", help="serve every .vis.db under a folder over HTTP (API docs at /docs)"
    )
    serve.add_argument(
        "--data-dir", type=Path, help="folder to serve (default: GRAPHBOARD_DATA_DIR or .)"
    )
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 8000)")
    serve.add_argument(
        "--no-write-token",
        action="store_true",
        help="let any caller write to graph files without a token (matches, undo, imports, "
        "suggestions); the default prints the viewer's URL with one (GRAPHBOARD_PROTECT_WRITES)",
    )
    serve.set_defaults(run=_run_serve)
    demo = commands.add_parser(
        "demo", help="dump a small model twice (golden, perturbed target), compare and serve it"
    )
    demo.add_argument("--out", type=Path, default=Path("graphboard-demo"), help="working folder")
    demo.add_argument("--no-serve", action="store_true", help="exit after building")
    demo.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    demo.add_argument("--port", type=int, help="port (default 8000)")
    demo.set_defaults(run=_run_demo)
    from graphboard.ci.check import add_parser as add_ci_check
    from graphboard.diagnose.command import add_parser as add_diagnose
    from graphboard.monitor.command import add_parser as add_monitor
    from graphboard.server.commands import add_parsers as add_service_commands
    from graphboard.suggest.command import add_parser as add_suggest
    from graphboard.table.command import add_parser as add_table
    from graphboard.verdict_cli import add_parser as add_verdict

    add_ci_check(commands)  # ci-check: upload, build on a server, exit code from the verdict
    add_verdict(commands)  # verdict: the same verdict from a .vis.db, no server
    add_diagnose(commands)  # diagnose: where inf/NaN was born, non-determinism, next dump
    add_table(commands)  # table: msprobe compare's result table as CSV / XLSX
    add_suggest(commands)  # suggest-matches: proposals for grey nodes (assisted matching)
    add_service_commands(commands)  # token create/list/revoke, worker
    add_monitor(commands)  # monitor: two runs' training-state trends, the first departure
    args = parser.parse_args(argv)
    return _guarded("graphboard", args.run, args)


if __name__ == "__main__":
    graph_build_command()
