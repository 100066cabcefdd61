"""tb_graph_ascend (msprobe's TensorBoard plugin for ``.vis.db`` files), run as an external
program and asked through its own HTTP routes, as its viewer asks it.

It lives in msprobe's environment (``GRAPHBOARD_MSPROBE_BIN`` or ``msprobe`` on PATH, see
msprobe_runner.py), with ``pip install tb-graph-ascend==8.3.2``; without either, the tests
that need it skip. tests/tb_graph_ascend_server.py starts TensorBoard with that plugin.

The plugin takes one ``.vis.db`` per folder of the logdir and names it by the folder (the
"run") and the file's name without ``.vis.db`` (the "tag"); ``open`` copies a file into its
own run folder, as the plugin rewrites a file's journal mode when it opens it.
"""

from __future__ import annotations

import json
import shutil
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from msprobe_runner import msprobe_binary

SERVER_SCRIPT = Path(__file__).with_name("tb_graph_ascend_server.py")
PLUGIN = "graph_ascend"
START_TIMEOUT = 90.0
REQUEST_TIMEOUT = 60.0
DB_SUFFIX = ".vis.db"


def plugin_python(distribution: str) -> str:
    """msprobe's Python, if TensorBoard and ``distribution`` (the one whose graph_ascend
    plugin to run) are installed beside it."""
    python = Path(msprobe_binary()).with_name("python")
    tensorboard = python.with_name("tensorboard")
    if not python.is_file() or not tensorboard.is_file():
        pytest.skip(f"no python and tensorboard beside {msprobe_binary()}")
    probe = [
        str(python),
        "-c",
        "from importlib import metadata; metadata.version('tb-graph-ascend')",
    ]
    if subprocess.run(probe, capture_output=True, timeout=60, check=False).returncode != 0:
        pytest.skip(f"tb-graph-ascend is not installed in {python.parent.parent}")
    return str(python)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _not_writable_by_others(path: Path) -> None:
    """The plugin refuses a logdir, run folder or file that group or others may write (unless
    it runs as root), which a umask of 002 would give."""
    path.chmod(path.stat().st_mode & ~(stat.S_IWGRP | stat.S_IWOTH))


class PluginError(AssertionError):
    """The plugin answered, but not with success."""


class TbGraphAscend:
    """One running TensorBoard with the plugin over ``logdir``."""

    def __init__(self, logdir: Path, distribution: str = "tb-graph-ascend") -> None:
        self.logdir = logdir
        logdir.mkdir(parents=True, exist_ok=True)
        _not_writable_by_others(logdir)
        self.port = _free_port()
        self._log = (logdir.parent / f"tensorboard-{self.port}.log").open("w")
        python = plugin_python(distribution)
        command = [python, str(SERVER_SCRIPT), str(logdir), str(self.port), distribution]
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        self._wait_until_up()

    @property
    def _base(self) -> str:
        return f"http://127.0.0.1:{self.port}/data/plugin/{PLUGIN}"

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self.stop()
                raise AssertionError(
                    f"tensorboard exited ({self._process.returncode}):\n{self.log()}"
                )
            try:
                self._get("/load_meta_dir")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        self.stop()
        raise AssertionError(f"tensorboard did not answer in {START_TIMEOUT:.0f} s:\n{self.log()}")

    def log(self) -> str:
        if not self._log.closed:  # still running
            self._log.flush()
        return (self.logdir.parent / f"tensorboard-{self.port}.log").read_text()[-3000:]

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=15)
        self._log.close()

    def _get(self, route: str) -> str:
        with urllib.request.urlopen(self._base + route, timeout=REQUEST_TIMEOUT) as answer:
            return str(answer.read().decode("utf-8"))

    def _post(self, route: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(self._base + route, data=json.dumps(body).encode())
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as answer:
            reply = json.loads(answer.read())
        if not reply.get("success"):
            raise PluginError(f"{route} {json.dumps(body)[:300]}: {reply}\n{self.log()}")
        return reply.get("data")

    def open(self, db: Path, run: str, rank: int = 0, step: int = 0) -> OpenGraph:
        """Put ``db`` in the logdir as ``run`` and load it as the viewer does: the run list,
        the graph, its config (tb_config); raise PluginError if the plugin reports an error."""
        assert db.name.endswith(DB_SUFFIX), db
        folder = self.logdir / run
        folder.mkdir()
        shutil.copyfile(db, folder / db.name)
        for made in (folder, folder / db.name):
            _not_writable_by_others(made)
        return self.load(run, db.name[: -len(DB_SUFFIX)], rank, step)

    def load(self, run: str, tag: str, rank: int = 0, step: int = 0) -> OpenGraph:
        """Load ``<logdir>/<run>/<tag>.vis.db``, already in place, as the viewer does."""
        listing = json.loads(self._get("/load_meta_dir"))
        if listing.get("error") or listing["data"].get(run) != {"type": "db", "tags": [tag]}:
            raise PluginError(f"load_meta_dir does not list {run}/{tag}{DB_SUFFIX}: {listing}")
        # tb-graph-ascend 8.3.2's loadGraphData answers the bare word "success" (it hands
        # werkzeug a dict, which sends its keys); the copy bundled with msprobe sends the JSON.
        loaded = self._get(f"/loadGraphData?run={run}&tag={tag}&type=db&lang=en")
        if loaded != "success" and loaded != json.dumps({"success": True}):
            raise PluginError(f"loadGraphData {run}/{tag}: {loaded}\n{self.log()}")
        meta: dict[str, Any] = {"run": run, "tag": tag, "type": "db", "lang": "en"}
        meta |= {"rank": rank, "step": step, "microStep": -1}
        config = self._post("/loadGraphConfigInfo", {"metaData": meta})
        return OpenGraph(self, meta, config)


class OpenGraph:
    """A file the plugin has loaded, at one rank and step."""

    def __init__(self, board: TbGraphAscend, meta: dict[str, Any], config: dict[str, Any]):
        self.board, self.meta, self.config = board, meta, config

    def _side(self, side: str) -> str:
        return "Single" if self.config["isSingleGraph"] else side

    def root_children(self, side: str = "NPU") -> list[str]:
        """The nodes the plugin shows under the root once it expands it (tb_nodes by up_node,
        in node_order)."""
        node = {"nodeName": "root", "nodeType": self._side(side)}
        shown = self.board._post(
            "/changeNodeExpandState", {"metaData": self.meta, "nodeInfo": node}
        )
        (root,) = [name for name, info in shown.items() if info["isRoot"]]
        return [name for name, info in shown.items() if info["parentNode"] == root]

    def node_detail(self, name: str, side: str = "NPU") -> dict[str, Any]:
        """The detail panel's data of a node: ``{"npu": ..., "bench": ...}`` for a compare
        (the counterpart's by its matched_node_link), ``{"npu": ...}`` for a build; each with
        tb_nodes' columns and its tb_stack entry."""
        node = {"nodeName": name, "nodeType": self._side(side)}
        detail: dict[str, Any] = self.board._post(
            "/getNodeInfo", {"metaData": self.meta, "nodeInfo": node}
        )
        return detail

    def node_list(self) -> dict[str, Any]:
        """Every node name the plugin's search lists (and the matched and unmatched ones of a
        compare)."""
        listed: dict[str, Any] = self.board._post("/loadGraphAllNodeList", {"metaData": self.meta})
        return listed

    def add_match(self, target: str, golden: str) -> dict[str, Any]:
        """The plugin's match of two nodes (its "match" button), which it writes into
        tb_nodes at once: the plugin's whole answer, ``success`` true or false."""
        return self._write("/addMatchNodes", target, golden, "isMatchChildren")

    def delete_match(self, target: str, golden: str) -> dict[str, Any]:
        """The plugin's unmatch of two nodes it holds as matched (its "unmatch" button)."""
        return self._write("/deleteMatchNodes", target, golden, "isUnMatchChildren")

    def _write(self, route: str, target: str, golden: str, children: str) -> dict[str, Any]:
        body = {"metaData": self.meta, "npuNodeName": target, "benchNodeName": golden}
        request = urllib.request.Request(
            self.board._base + route, data=json.dumps({**body, children: False}).encode()
        )
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as answer:
            reply: dict[str, Any] = json.loads(answer.read())
        return reply

    def search_by_precision(self, bands: list[list[float]]) -> list[str]:
        """The leaf target nodes whose precision_index lies in one of ``bands`` (the plugin's
        search by the legend's colours), in node_order."""
        body = {"metaData": self.meta, "type": "precision", "values": bands}
        found: list[str] = self.board._post("/screen", body)
        return found
