"""Two servers and a command writing one .vis.db at once never corrupt it (issue 30, point 1).

Separate processes, as users run them: two ``graphboard serve`` on one data dir (each its own
catalog), two HTTP clients on each (matches, unmatches, undos, suggestion accepts and
rejects), and ``graphboard suggest-matches --apply`` runs, all on one compare. Afterwards the
file passes ``integrity_check``, every table reads back whole and agrees with each of its
indexes (SQLite 3.40's check missed some damage two writers made), every manual pair reads
back, and undoing every action that stands restores the build's match state exactly. A third
server on the first one's state folder refuses to start, in one line, with the reason.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from ci_support import free_port, serve_process
from graphboard import matching
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE
from graphboard.server.errors import Conflict
from graphboard.server.settings import Settings
from graphboard.server.viewer_token import TOKEN_FILE
from graphboard.store.reader import (
    GraphKey,
    held_files,
    listing,
    manual_matches,
    node_data,
    open_vis_db,
    opening,
    overlay,
)
from graphboard.suggest.rejections import reject
from renamed_dumps import renamed_compare
from tb_graph_ascend_runner import OpenGraph, TbGraphAscend

CLIENT = Path(__file__).parents[1] / "concurrent_writers.py"
OPERATIONS = 60  # per client: 4 clients, 240 writes and reads, and the commands' imports
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def compare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compare with grey nodes and proposals for them: the golden renamed Megatron's way."""
    return renamed_compare(tmp_path_factory.mktemp("renamed"), 2, 1).renamed


def _read_everything(path: Path) -> None:
    """Every row of every table, and every index's row count against its table's."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        for table in tables:
            rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            for (index,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", (table,)
            ).fetchall():
                through = conn.execute(f'SELECT count(*) FROM "{table}" INDEXED BY "{index}"')
                assert through.fetchone()[0] == len(rows), f"{table}: index {index} disagrees"
    conn.close()


def _match_state(path: Path, cache: Path) -> dict[str, list[object]]:
    with open_vis_db(path, cache) as db:
        state = {}
        for side in (TARGET_SIDE, GOLDEN_SIDE):
            view = overlay.graph_view(db, GraphKey(side, 0, 0))
            for column in ("matched", "counterpart", "level"):
                if column in view.columns:
                    state[f"{side}.{column}"] = np.asarray(view.columns[column]).tolist()
        return state


def _undo_every_action(path: Path, settings: Settings) -> int:
    """Undo the file's actions one by one until nothing is left to undo; how many."""
    undone = 0
    while True:
        try:
            matching.undo(path, settings, 0, 0)
        except Conflict:
            return undone
        undone += 1


def test_two_servers_and_a_command_writing_one_file_never_corrupt_it(
    compare: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    path = data / "run.vis.db"
    shutil.copy(compare, path)
    before = _match_state(compare, tmp_path / "cache-before")
    ports = [free_port(), free_port()]
    servers = [
        serve_process(data, port, GRAPHBOARD_STATE_DIR=str(tmp_path / f"state{i}"))
        for i, port in enumerate(ports)
    ]
    # each server's viewer token, kept in its state folder: writes need it
    tokens = [(tmp_path / f"state{i}" / TOKEN_FILE).read_text().strip() for i in range(2)]
    try:
        clients = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(CLIENT),
                    f"http://127.0.0.1:{ports[seed % 2]}",
                    "run",
                    str(seed),
                    str(OPERATIONS),
                    tokens[seed % 2],
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for seed in range(4)
        ]
        applied = 0
        while any(client.poll() is None for client in clients) or applied < 2:
            command = subprocess.run(
                [
                    str(BIN / "graphboard"),
                    "suggest-matches",
                    str(path),
                    "--apply",
                    "--min-confidence",
                    "0",
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert command.returncode == 0, command.stderr
            applied += 1
        answers = [json.loads(client.communicate(timeout=300)[0]) for client in clients]
        # Two embedded job runners on one state folder would both queue again the same
        # jobs: a third server on the first one's state says so and stops.
        third = subprocess.Popen(
            [str(BIN / "graphboard"), "serve", "--data-dir", str(data), "--port", str(free_port())],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "GRAPHBOARD_STATE_DIR": str(tmp_path / "state0")},
        )
        try:
            refusal = third.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:  # it started: checked last
            third.terminate()
            refusal = third.communicate()[1]
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(timeout=30)
    for answer in answers:
        assert answer["bad"] == []
        assert answer["statuses"].get("200", 0) > OPERATIONS // 4, answer
    _read_everything(path)

    settings = Settings(data_dir=data, state_dir=tmp_path / "state-check")
    with open_vis_db(path, settings.cache_dir) as db:
        standing = [a for a in overlay.match_history(db, 0, 0) if a.undone_at is None]
        assert len(overlay.match_history(db, 0, 0)) >= OPERATIONS  # the writers did write
        target = overlay.graph_view(db, GraphKey(TARGET_SIDE, 0, 0))
        golden = overlay.graph_view(db, GraphKey(GOLDEN_SIDE, 0, 0))
        for pair in overlay.manual_pairs(db, 0, 0):  # every pair reads back, on nodes that exist
            assert node_data.orders_of_names(db, GraphKey(TARGET_SIDE, 0, 0), [pair.target])
            assert node_data.orders_of_names(db, GraphKey(GOLDEN_SIDE, 0, 0), [pair.golden])
        assert len(target) and len(golden)
    assert _undo_every_action(path, settings) == len(standing)
    with open_vis_db(path, settings.cache_dir) as db:
        assert overlay.manual_pairs(db, 0, 0) == []
    assert _match_state(path, settings.cache_dir) == before
    _read_everything(path)

    lines = refusal.strip().splitlines()
    assert third.returncode == 1 and len(lines) == 1, refusal
    assert "another graphboard server (pid" in lines[0] and "GRAPHBOARD_STATE_DIR" in lines[0]


_TRY_WRITE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
try:
    conn.execute("BEGIN IMMEDIATE")
except sqlite3.OperationalError as error:
    print(error)
else:
    print("took the write lock")
"""


def test_opening_and_closing_a_file_keeps_a_write_transactions_lock(
    compare: Path, tmp_path: Path
) -> None:
    """The mechanism of the corruption, deterministically: while one connection of this
    process holds the write lock, a read of the same file opened and closed here (as every
    request does) must leave the lock in place, so another process cannot write."""
    path = tmp_path / "run.vis.db"
    shutil.copy(compare, path)
    settings = Settings(data_dir=tmp_path, state_dir=tmp_path / "state")
    with (
        open_vis_db(path, settings.cache_dir, writable=True) as writer,
        manual_matches.matching_write(writer),
    ):
        with open_vis_db(path, settings.cache_dir) as reader:
            listing.graphs(reader)
        other = subprocess.run(
            [sys.executable, "-c", _TRY_WRITE, str(path)], capture_output=True, text=True
        )
    assert other.stdout.strip() == "database is locked", other.stdout + other.stderr
    assert held_files.held_count() == 0  # every descriptor closed with its last connection


@pytest.mark.parametrize("held", ["RESERVED", "SHARED"])
def test_a_writer_held_off_past_the_busy_wait_gets_409_busy(
    compare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: str
) -> None:
    """Another connection holds the file past the (shortened) busy wait: at the start of the
    write (a writer's RESERVED lock) or at its commit (a reader's SHARED lock, which the
    commit must wait out). Either is a 409 'busy', and nothing of the write is kept."""
    path = tmp_path / "run.vis.db"
    shutil.copy(compare, path)
    settings = Settings(data_dir=tmp_path, state_dir=tmp_path / "state")
    # rejections name nodes the file holds (others are refused: a store that cannot grow)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as names:
        target_names, golden_names = (
            [
                row[0]
                for row in names.execute(
                    "SELECT node_name FROM tb_nodes WHERE data_source = ? AND step = 0"
                    " AND rank = 0 ORDER BY node_order LIMIT 2",
                    (side,),
                )
            ]
            for side in ("NPU", "Bench")
        )
    names.close()
    reject(path, settings, 0, 0, target_names[0], golden_names[0])  # tables made
    monkeypatch.setattr(opening, "BUSY_SECONDS", 0.2)
    other = sqlite3.connect(path, isolation_level=None)
    if held == "RESERVED":
        other.execute("BEGIN IMMEDIATE")
    else:
        other.execute("BEGIN")
        other.execute("SELECT count(*) FROM tb_nodes").fetchone()  # SHARED until ROLLBACK
    try:
        with pytest.raises(Conflict) as refused:
            reject(path, settings, 0, 0, target_names[1], golden_names[1])
    finally:
        other.execute("ROLLBACK")
    assert refused.value.code == "busy" and "try again" in str(refused.value)
    kept = other.execute("SELECT target FROM gb_suggest_rejections").fetchall()
    other.close()
    assert kept == [(target_names[0],)]


PLUGIN_OPERATIONS = 120  # the plugin's matches and unmatches, beside the server's clients'


def _plugin_writes(
    graph: OpenGraph, pairs: list[tuple[str, str]], seed: int
) -> tuple[list[str], int]:
    """tb_graph_ascend's viewer matching and unmatching, in a random order (seeded), then
    unmatching every pair it added: its own undo. The plugin also pairs each node's forward or
    backward counterpart, so what it added is read from its answers (its list of matched
    nodes, against the one it loaded). Returns the answers no writer should get (a failed
    database update, which is how the plugin reports a locked or damaged file; a refusal
    such as "cannot be matched" is an ordinary answer) and how many writes went through."""
    chosen = random.Random(seed)
    loaded = dict(graph.node_list()["npuMatchNodes"])  # the viewer loads it first
    matched = dict(loaded)
    bad: list[str] = []
    written = 0

    def write(kind: str, pair: tuple[str, str]) -> bool:
        nonlocal written
        answer = (graph.add_match if kind == "add" else graph.delete_match)(*pair)
        if answer.get("success"):
            written += 1
            matched.clear()
            matched.update(answer["data"]["npuMatchNodes"])
        elif "atabase" in str(answer.get("error")):
            bad.append(f"{kind} {pair}: {answer}")
        return bool(answer.get("success"))

    def added() -> list[tuple[str, str]]:
        return sorted(pair for pair in matched.items() if loaded.get(pair[0]) != pair[1])

    for _ in range(PLUGIN_OPERATIONS):
        if added() and chosen.random() < 0.4:
            write("delete", chosen.choice(added()))
        else:
            write("add", chosen.choice(pairs))
    while added():
        pair = added()[0]
        if not write("delete", pair):
            bad.append(f"the plugin could not take back its own match {pair}")
            break
    return bad, written


def _the_server_reads_what_the_plugin_wrote(
    graph: OpenGraph, pairs: list[tuple[str, str]], port: int
) -> None:
    """A pair the plugin matched is the server's next answer for that node, while the write
    still sits in the plugin's WAL (it never checkpoints while it runs); the plugin's own
    unmatch is seen the same way."""
    pair = next(pair for pair in pairs if graph.add_match(*pair).get("success"))

    def counterpart() -> str | None:
        answer = httpx.get(
            f"http://127.0.0.1:{port}/api/graphs/run/node",
            params={"side": "target", "step": 0, "rank": 0, "name": pair[0]},
            timeout=60,
        )
        golden = answer.raise_for_status().json()["golden"]
        return golden["node"]["name"] if golden else None

    assert counterpart() == pair[1]
    assert graph.delete_match(*pair).get("success")
    assert counterpart() is None


def test_a_server_and_tb_graph_ascend_writing_one_file_never_corrupt_it(
    compare: Path, tmp_path: Path
) -> None:
    """msprobe's TensorBoard plugin writes matches into tb_nodes itself, over a connection it
    keeps open and switches to WAL. With it and a graphboard server writing one file at once
    (the plugin's logdir run folder is the server's data dir), the file stays whole, every
    action of each undoes, and together they leave the build's match state."""
    logdir = tmp_path / "logdir"
    data = logdir / "run"
    data.mkdir(parents=True)
    path = data / "run.vis.db"
    shutil.copy(compare, path)
    path.chmod(0o600)
    before = _match_state(compare, tmp_path / "cache-before")
    board = TbGraphAscend(logdir)
    port = free_port()
    server = serve_process(data, port, GRAPHBOARD_STATE_DIR=str(tmp_path / "state"))
    token = (tmp_path / "state" / TOKEN_FILE).read_text().strip()
    try:
        graph = board.load("run", "run")
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # the plugin's
        conn.close()
        found = httpx.get(
            f"http://127.0.0.1:{port}/api/graphs/run/suggestions",
            params={"step": 0, "rank": 0, "min_confidence": 0},
            timeout=60,
        )
        pairs = [(s["target"], s["golden"]) for s in found.raise_for_status().json()["suggestions"]]
        assert len(pairs) >= 4, pairs
        _the_server_reads_what_the_plugin_wrote(graph, pairs, port)
        clients = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(CLIENT),
                    f"http://127.0.0.1:{port}",
                    "run",
                    str(seed),
                    str(OPERATIONS),
                    token,
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for seed in range(2)
        ]
        plugin_bad, plugin_written = _plugin_writes(graph, pairs, seed=7)
        answers = [json.loads(client.communicate(timeout=300)[0]) for client in clients]
    finally:
        server.terminate()
        server.wait(timeout=30)
        board.stop()  # closes the plugin's connection: its WAL is checkpointed into the file
    assert plugin_bad == [], plugin_bad
    assert plugin_written > PLUGIN_OPERATIONS // 4, plugin_written  # the plugin did write
    for answer in answers:
        assert answer["bad"] == []
        assert answer["statuses"].get("200", 0) > OPERATIONS // 4, answer
    assert "malformed" not in board.log()
    _read_everything(path)

    settings = Settings(data_dir=data, state_dir=tmp_path / "state-check")
    with open_vis_db(path, settings.cache_dir) as db:
        standing = [a for a in overlay.match_history(db, 0, 0) if a.undone_at is None]
        assert len(overlay.match_history(db, 0, 0)) >= OPERATIONS // 2  # the server did write
    assert _undo_every_action(path, settings) == len(standing)
    assert _match_state(path, settings.cache_dir) == before
    _read_everything(path)
