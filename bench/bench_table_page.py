"""The compare table's first page on a big compare, as a browser asks for it: latency and the
server's peak memory (issue 30, point 5: 42-58 s and 3.3 GB on a 300k-record compare).

``graphboard serve`` runs in its own process on the folder holding the file; its peak RSS is
the kernel's high-water mark (VmHWM) read after each request. The compare is made with
make_synthetic_dump.py and graph_build:

    python bench/make_synthetic_dump.py --records 300000 --out /tmp/t300/golden
    python bench/make_synthetic_dump.py --records 300000 --out /tmp/t300/target --variant target
    graph_build -tp /tmp/t300/target -gp /tmp/t300/golden -o /tmp/t300/out
    python bench/bench_table_page.py /tmp/t300/out/compare_*.vis.db [--record]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from pathlib import Path

import httpx

from harness import BENCH, free_port, serve_process


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + system): the machine's load does not change it."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(http: httpx.Client, url: str, **params: str | int | bool) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = http.get(url, params=params)
    return time.perf_counter() - start, response


def answer_of(response: httpx.Response) -> str:
    """Nothing for a page, else the refusal's status and code."""
    if response.status_code == 200:
        return ""
    return f" ({response.status_code} {response.json()['error']['code']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument(
        "--record", action="store_true", help="append to bench/results/table_page.md"
    )
    parser.add_argument("--note", default="", help="a line written above the recorded table")
    args = parser.parse_args()
    file: Path = args.file.resolve()
    graph = file.name.removesuffix(".vis.db")
    port = free_port()
    process = serve_process(file.parent, port)  # GRAPHBOARD_* settings from the environment
    lines = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as http:
            base_rss = peak_rss_mb(process.pid)
            url = f"/api/graphs/{graph}/table"
            q = {"step": 0, "rank": 0}
            cpu = cpu_seconds(process.pid)
            first, response = timed(http, url, **q, limit=200)
            first_cpu = cpu_seconds(process.pid) - cpu
            after_first = peak_rss_mb(process.pid)
            if response.status_code != 200:
                answer = f"{response.status_code} {response.json()['error']['code']}"
                lines = [
                    f"| {file.stat().st_size / 1e9:.2f} GB | {answer} after {first:.1f} s ({first_cpu:.1f} s CPU) | - | - "
                    f"| - | - | - | {base_rss:.0f} / {after_first:.0f} / - / - MB |"
                ]
                print(response.json()["error"]["message"])
            else:
                total = response.json()["total"]
                second, response = timed(http, url, **q, limit=200, cursor=200)
                errors_first, response = timed(http, url, **q, limit=200, sort="Result")
                errors_note = answer_of(response)
                sorted_s, response = timed(
                    http, url, **q, limit=200, sort="MaxRelativeErr", descending=True
                )
                sorted_note = answer_of(response)
                named_s, response = timed(http, url, **q, limit=200, name="linear_fc1")
                named_note = answer_of(response)
                after_sort = peak_rss_mb(process.pid)
                start = time.perf_counter()
                size = 0
                first_byte = 0.0
                with http.stream("GET", f"/api/graphs/{graph}/table-export", params=q) as stream:
                    for chunk in stream.iter_bytes():
                        if not size:
                            first_byte = time.perf_counter() - start
                        size += len(chunk)
                export = time.perf_counter() - start
                after_export = peak_rss_mb(process.pid)
                lines = [
                    f"| {file.stat().st_size / 1e9:.2f} GB, {total:,} rows | {first:.2f} s ({first_cpu:.1f} s CPU) "
                    f"| {second:.3f} s | {errors_first:.2f} s{errors_note} "
                    f"| {sorted_s:.2f} s{sorted_note} | {named_s:.2f} s{named_note} "
                    f"| {first_byte:.2f} s / {export:.1f} s "
                    f"({size / 1e6:.0f} MB) | {base_rss:.0f} / {after_first:.0f} / "
                    f"{after_sort:.0f} / {after_export:.0f} MB |"
                ]
    finally:
        process.terminate()
        process.wait(timeout=60)
    header = [
        "| file | first page | next page | errors first (sort=Result) | sorted by MaxRelativeErr "
        "| name filter (linear_fc1) | CSV export: first byte / whole "
        "| peak RSS: started / first page / sorted and filtered / export |",
        "|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(header + lines))
    if args.record:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=BENCH
        ).stdout.strip()
        out = BENCH / "results" / "table_page.md"
        if not out.exists():
            out.write_text(
                "# The compare table's first page on a big compare\n\n"
                "`python bench/bench_table_page.py FILE --record` (see its docstring). Each line:"
                " one fresh `graphboard serve` process, one request after another.\n"
            )
        with out.open("a") as handle:
            handle.write(
                f"\n## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}, "
                f"{platform.node()} ({platform.processor() or platform.machine()})\n\n"
            )
            if args.note:
                handle.write(args.note + "\n\n")
            handle.write("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
