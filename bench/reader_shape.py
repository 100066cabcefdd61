"""The reader's shape, counted: the classes behind ``VisDb`` (how many, how deep, how many
methods) and which of graphboard's source files a read route runs through.

A route's files are those whose code runs while the server answers one request (a real
app under FastAPI's TestClient, the request's threads profiled): the node-detail route
(``/node``) and the tree route (``/children``), each with the graph's columns loaded afresh
(the per-graph view cache cleared first), on graphboard's build of the convnet-stats
fixture. Run it with ``PYTHONPATH`` pointing at another checkout's ``backend`` to count
that version the same way.

    python bench/reader_shape.py [--fixtures /work/shared/fixtures]
"""

from __future__ import annotations

import argparse
import inspect
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from fastapi.testclient import TestClient

import graphboard
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from graphboard.store import reader
from graphboard.store.graph_views import VIEWS

PACKAGE = Path(graphboard.__file__).parent
Q: dict[str, str | int] = {"side": "NPU", "step": 0, "rank": 0}


def class_shape() -> dict[str, int]:
    """graphboard's classes in VisDb's MRO, the longest inheritance chain among them, and
    the methods they define; with the reader's module-level functions beside them."""
    ours = [cls for cls in reader.VisDb.__mro__ if cls.__module__.startswith("graphboard.")]

    def depth(cls: type) -> int:
        bases = [base for base in cls.__bases__ if base in ours]
        return 1 + max((depth(base) for base in bases), default=0)

    methods = sum(1 for cls in ours for value in vars(cls).values() if inspect.isfunction(value))
    functions = 0
    for path in sorted((PACKAGE / "store" / "reader").glob("*.py")):
        name = f"graphboard.store.reader.{path.stem}" if path.stem != "__init__" else None
        module = sys.modules.get(name) if name else None
        if module is not None:
            functions += sum(
                1
                for value in vars(module).values()
                if inspect.isfunction(value) and value.__module__ == name
            )
    return {
        "classes": len(ours),
        "levels": depth(reader.VisDb),
        "methods": methods,
        "reader functions": functions,
    }


class FilesRun:
    """graphboard's source files whose code runs while :meth:`during` calls, on any thread.
    The profiler is installed before the server's threads start (a thread takes it when it
    starts) and records only inside :meth:`during`."""

    def __init__(self) -> None:
        self.recording = False
        self.seen: set[str] = set()
        self.reader_calls: set[str] = set()  # qualified names of the reader's code that ran
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)

    def _profile(self, frame: FrameType, event: str, _arg: object) -> None:
        if self.recording and event == "call":
            name = frame.f_code.co_filename
            if name.startswith(str(PACKAGE)):
                self.seen.add(str(Path(name).relative_to(PACKAGE.parent)))
                if "/store/reader/" in name and "<" not in frame.f_code.co_qualname:
                    self.reader_calls.add(f"{Path(name).stem}.{frame.f_code.co_qualname}")

    def during(self, call: Callable[[], Any]) -> list[str]:
        self.seen = set()
        self.reader_calls = set()
        self.recording = True
        try:
            call()
        finally:
            self.recording = False
        return sorted(self.seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=Path("/work/shared/fixtures"))
    args = parser.parse_args()
    case = args.fixtures / "convnet-stats"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        built = run_build(
            BuildOptions(target=case / "target", golden=case / "golden", output_dir=root / "out")
        )
        (root / "data").mkdir()
        shutil.copyfile(built.path, root / "data" / "convnet.vis.db")
        files_run = FilesRun()
        with TestClient(create_app(Settings(data_dir=root / "data"))) as client:
            top = client.get("/api/graphs/convnet/children", params=Q)
            assert top.status_code == 200, top.text
            leaf = top.json()["items"][0]["name"]
            routes = {
                "tree (/children)": ("children", {}),
                "node detail (/node)": ("node", {"name": leaf}),
            }
            print("| shape | count |\n|---|---|")
            for what, count in class_shape().items():
                print(f"| {what} | {count} |")
            for route, (path, params) in routes.items():

                def ask(path: str = path, params: dict[str, str] = params) -> None:
                    response = client.get(f"/api/graphs/convnet/{path}", params={**Q, **params})
                    assert response.status_code == 200, response.text

                VIEWS.clear()
                files = files_run.during(ask)
                readers = [name for name in files if "/store/reader/" in name]
                calls = sorted(files_run.reader_calls)
                methods = [call for call in calls if call.count(".") > 1]
                print(
                    f"\n{route}: {len(files)} graphboard files, {len(readers)} of store/reader; "
                    f"{len(calls)} reader functions or methods ran, {len(methods)} of them "
                    f"methods ({', '.join(methods)})"
                )
                for name in files:
                    print(f"  {name}")


if __name__ == "__main__":
    main()
