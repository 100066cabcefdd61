"""Read-API latency on a big .vis.db: p50 / p95 of children, node, search and filter.

A compare of two synthetic transformer dumps of ~1,000,000 records per side (over 1.2 million
nodes per side) is built once with graph_build and cached under bench/data/, as is a file
whose root has 200,000 children. ``graphboard serve`` runs in its own process; requests go
over HTTP with keep-alive, one at a time, as a browser tab sends them.

    python bench/bench_api.py                # 1M records per side
    python bench/bench_api.py --records 200000 --requests 100
    python bench/bench_api.py --record       # also write bench/results/api.md
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from graphboard.graph.model import ROOT_NAME, Graph, Node, node_type_of
from graphboard.store import writer
from graphboard.store.sink import open_sink
from harness import DATA, GRAPH_BUILD, free_port, record, serve_process, synthetic

TARGETS_MS = {"children": 30, "node": 30, "search": 150, "filter": 150}


def big_compare(records: int) -> Path:
    """The cached compare .vis.db of two synthetic dumps of ``records`` records each."""
    folder = DATA / f"api-{records}"
    found = sorted(folder.glob("*.vis.db"))
    if found:
        return found[0]
    name = "records1m" if records == 1_000_000 else f"records{records}"  # as bench_compare.py
    golden = synthetic(f"{name}-golden", "--records", str(records)) / "step0" / "rank0"
    target = (
        synthetic(f"{name}-target", "--records", str(records), "--variant", "target")
        / "step0"
        / "rank0"
    )
    started = time.perf_counter()
    subprocess.run(
        [
            *GRAPH_BUILD,
            "-tp",
            str(target),
            "-gp",
            str(golden),
            "-o",
            str(folder),
            "--name",
            "compare.vis.db",
            "-q",
        ],
        check=True,
    )
    print(f"built {folder / 'compare.vis.db'} in {time.perf_counter() - started:.0f}s", flush=True)
    return folder / "compare.vis.db"


def wide_file(folder: Path, children: int) -> Path:
    """A build whose root has ``children`` API children: the widest node a user can open."""
    path = folder / f"wide-{children}.vis.db"
    if path.exists():
        return path
    root = Node(ROOT_NAME, node_type_of(ROOT_NAME))
    nodes = {ROOT_NAME: root}
    for index in range(children):
        name = f"Tensor.add.{index}.forward"
        node = Node(name, node_type_of(name))
        node.attach(root)
        nodes[name] = node
    graph = Graph("NPU", 0, 0, root, nodes)
    graph.number()
    temp = path.with_suffix(".tmp")
    part = open_sink(temp, True)
    writer.write_graphs(part, [(graph, None)], None)
    part.close()
    conn = writer.open_db(temp)
    writer.write_config(conn, writer.ConfigRow("build", "", None, 1, False, None, [0], [0]))
    writer.finalize(conn)
    temp.rename(path)
    return path


class Server:
    """``graphboard serve`` in a child process, stopped by its own pid."""

    def __init__(self, data_dir: Path, state_dir: Path) -> None:
        self.port = free_port()
        self.process = serve_process(data_dir, self.port, GRAPHBOARD_STATE_DIR=str(state_dir))
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=600)

    def get(self, path: str, **params: Any) -> tuple[float, Any]:
        started = time.perf_counter()
        response = self.client.get(path, params=params)
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"{path} {params}: {response.status_code} {response.text[:300]}")
        return elapsed, response.json()

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=30)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


Request = tuple[str, dict[str, Any]]


def measure(server: Server, name: str, requests: list[Request]) -> dict[str, Any]:
    """Time prepared requests one after the other."""
    timings = [server.get(path, **params)[0] for path, params in requests]
    return {
        "endpoint": name,
        "n": len(timings),
        "p50": statistics.median(timings),
        "p95": percentile(timings, 0.95),
        "max": max(timings),
    }


def collect_names(
    server: Server, graph: str, query: dict[str, Any], count: int, rng: random.Random
) -> tuple[list[str], list[str]]:
    """Some modules (with children) and some nodes of the graph, reached by walking it."""
    modules: list[str] = []
    nodes: list[str] = []
    frontier = [None]
    while frontier and len(modules) < count:
        parent = frontier.pop(rng.randrange(len(frontier)))
        params = {**query, "limit": 500} | ({"parent": parent} if parent else {})
        _elapsed, page = server.get(f"/api/graphs/{graph}/children", **params)
        for item in page["items"]:
            nodes.append(item["name"])
            if item["child_count"]:
                modules.append(item["name"])
                frontier.append(item["name"])
    return modules, nodes


def fresh_query(rng: random.Random, names: list[str], seen: set[str]) -> str:
    """A substring of a real node name, 3 to 24 characters, not asked before: what a user
    types, and never answered from the server's memory of recent totals."""
    while True:
        name = rng.choice(names)
        length = rng.randint(3, min(24, len(name)))
        start = rng.randrange(len(name) - length + 1)
        text = name[start : start + length]
        if text.lower() not in seen and "\n" not in text:
            seen.add(text.lower())
            return text


def run(records: int, requests: int, seed: int) -> str:
    rng = random.Random(seed)
    big = big_compare(records)
    wide = wide_file(big.parent, 200_000)
    query = {"side": "NPU", "step": 0, "rank": 0}
    graph = big.stem.removesuffix(".vis")
    with tempfile.TemporaryDirectory(dir=DATA) as state:
        server = Server(big.parent, Path(state))
        try:
            listing = server.get("/api/graphs")[1]["files"]
            nodes_per_side = {entry["id"]: entry["graphs"][0]["node_count"] for entry in listing}
            cold, _ = server.get(f"/api/graphs/{graph}/children", **query)
            cold_search, _ = server.get(
                f"/api/graphs/{graph}/search", **query, q="linear_fc1", limit=50
            )
            modules, names = collect_names(server, graph, query, 300, rng)
            seen: set[str] = {"linear_fc1"}
            layer_count = max(1, records // 105)
            base = f"/api/graphs/{graph}"
            wide_children = "/api/graphs/" + wide.stem.removesuffix(".vis") + "/children"
            filters: list[dict[str, Any]] = [
                {"precision": ["error"]},
                {"precision": ["warning", "error"]},
                {"precision": ["pass"]},
                {"unmatched": True, "precision": ["error"]},
            ]
            regexes = [r"layers\.\d+\.mlp\.linear_fc1", r"^Functional\.softmax"]
            plan: list[tuple[str, list[Request]]] = [
                (
                    "children (a module, first page)",
                    [
                        (f"{base}/children", {**query, "parent": rng.choice(modules), "limit": 200})
                        for _ in range(requests)
                    ],
                ),
                (
                    "children (200k-child root, page at a random cursor)",
                    [
                        (wide_children, {**query, "cursor": rng.randrange(199_000), "limit": 200})
                        for _ in range(requests)
                    ],
                ),
                (
                    "node (both sides, paired rows)",
                    [
                        (f"{base}/node", {**query, "name": rng.choice(names)})
                        for _ in range(requests)
                    ],
                ),
                (
                    "search (a new query: first page + total)",
                    [
                        (
                            f"{base}/search",
                            {**query, "q": fresh_query(rng, names, seen), "limit": 50},
                        )
                        for _ in range(requests)
                    ],
                ),
                (
                    "search (next page of a query)",
                    [
                        (
                            f"{base}/search",
                            {
                                **query,
                                "q": rng.choice(["backward", "self_attention", "Tensor.__mul__"]),
                                "cursor": rng.randrange(10_000),
                                "limit": 50,
                            },
                        )
                        for _ in range(requests)
                    ],
                ),
                (
                    "search (regex)",
                    [
                        (
                            f"{base}/search",
                            {
                                **query,
                                "q": rng.choice(
                                    [*regexes, rf"layers\.{rng.randrange(layer_count)}\..*backward"]
                                ),
                                "regex": True,
                                "limit": 50,
                            },
                        )
                        for _ in range(requests // 4)
                    ],
                ),
                (
                    "filter (precision / unmatched, random cursor)",
                    [
                        (
                            f"{base}/filter",
                            {
                                **query,
                                **rng.choice(filters),
                                "cursor": rng.randrange(nodes_per_side[graph]),
                                "limit": 100,
                            },
                        )
                        for _ in range(requests)
                    ],
                ),
            ]
            results = [measure(server, name, requests_of) for name, requests_of in plan]
        finally:
            server.close()
    lines = [
        "## Read API latency (HTTP, keep-alive, one request at a time)",
        "",
        f"File: compare of two synthetic transformer dumps, {records:,} records per side: "
        f"{nodes_per_side[graph]:,} nodes per side ({2 * nodes_per_side[graph]:,} in the file), "
        f"{big.stat().st_size / 2**20:,.0f} MiB. Wide file: one node with 200,000 children.",
        f"First request after start-up (loads the graph's columns): {cold:.0f} ms; first search "
        f"(builds the name index): {cold_search:.0f} ms.",
        "",
        "| endpoint | requests | p50 ms | p95 ms | max ms | target p95 ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in results:
        family = row["endpoint"].split(" ")[0]
        target = TARGETS_MS.get(family)
        lines.append(
            f"| {row['endpoint']} | {row['n']} | {row['p50']:.1f} | {row['p95']:.1f} | {row['max']:.1f} | {target or '–'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="dump records per side")
    parser.add_argument("--requests", type=int, default=200, help="requests per endpoint")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--record", action="store_true", help="write bench/results/api.md")
    args = parser.parse_args()
    text = run(args.records, args.requests, args.seed)
    print("\n" + text)
    if args.record:
        record("api", text)


if __name__ == "__main__":
    main()
