"""Reader calls in-process on a .vis.db: each call as a request makes it (open, ask, close).

Times what the server's read routes ask of :class:`~graphboard.store.reader.VisDb` (root,
a page of children, a node, a name search, a level filter, the graph list), 200 times each,
with the per-graph columns warm as a running server has them; no HTTP. ``--reader`` names
another module offering ``open_vis_db`` (a saved copy of an earlier reader) so two versions
are timed alternately in the same minutes.

    python bench/bench_reader.py FILE.vis.db
    python bench/bench_reader.py FILE.vis.db --reader /tmp/reader_before.py
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from graphboard.compare.result import Level
from graphboard.store import reader
from graphboard.store.graph_views import VIEWS, GraphKey
from graphboard.store.reader import listing, node_data, tree
from graphboard.store.reader import search as reader_search


def _module_at(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("reader_compared", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def _calls(module: Any, path: Path, cache: Path) -> dict[str, Callable[[], object]]:
    key = GraphKey("NPU", 0, 0)

    def ask(question: Callable[[Any], object]) -> Callable[[], object]:
        def call() -> object:
            with module.open_vis_db(path, cache) as db:
                return question(db)

        return call

    with module.open_vis_db(path, cache) as db:
        root = tree.root(db, key)
        assert root is not None
        child = tree.children(db, key, root.name, limit=50).items[0].name
    return {
        "graphs": ask(lambda db: listing.graphs(db)),
        "root": ask(lambda db: tree.root(db, key)),
        "children": ask(lambda db: tree.children(db, key, root.name, limit=50)),
        "node": ask(lambda db: node_data.node(db, key, child)),
        "search": ask(lambda db: reader_search.find_names(db, key, "linear", limit=50)),
        "filter": ask(
            lambda db: reader_search.filter_by(
                db, key, levels=[Level.ERROR, Level.WARNING], limit=50
            )
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--reader", type=Path, help="a reader module file to time against")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--cpu", action="store_true", help="this process's CPU time, not wall time (a busy machine)"
    )
    args = parser.parse_args()
    readers: dict[str, Any] = {"current": reader}
    if args.reader is not None:
        readers["other"] = _module_at(args.reader)
    with tempfile.TemporaryDirectory() as cache:
        clock = time.process_time if args.cpu else time.perf_counter
        calls = {name: _calls(module, args.file, Path(cache)) for name, module in readers.items()}
        timings: dict[tuple[str, str], list[float]] = {}
        for round_ in range(args.rounds):  # the readers alternate, which goes first too
            order = list(calls.items())
            for name, asked in order if round_ % 2 == 0 else reversed(order):
                VIEWS.clear()
                for question, call in asked.items():
                    call()  # warm: the columns are loaded once, as in a running server
                    started = clock()
                    for _ in range(args.calls):
                        call()
                    elapsed = (clock() - started) / args.calls
                    timings.setdefault((name, question), []).append(elapsed)
    what = "CPU" if args.cpu else "wall"
    print(
        f"{args.file.name}: median of {args.rounds} rounds, {what} ms per call ({args.calls} calls)"
    )
    questions = list(next(iter(calls.values())))
    print("| reader | " + " | ".join(questions) + " |")
    print("|---|" + "---|" * len(questions))
    for name in readers:
        cells = [f"{statistics.median(timings[(name, q)]) * 1000:.3f}" for q in questions]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
