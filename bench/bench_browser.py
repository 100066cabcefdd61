"""Browser timings of the viewer on big files, in Debian's headless Chromium.

1. Time to first paint of a compare view of a synthetic transformer with 10,000 layers
   (~1.2 M nodes per side): from navigation start to both panes showing their rows
   (target: <= 1.5 s), cold (the server's first look at the file) and warm.
2. Time to expand ``Module.decoder.TransformerBlock.forward.0`` (10,000 children) until the
   rows are painted (target: <= 300 ms).
3. A module with 100,000 children: expand and scroll through pages; the longest main-thread
   task (the page must never freeze) and the DOM rows in use.

The files are built once and cached under ``bench/data/`` (gitignored); building the 10,000
layer compare takes ~13 minutes on 2 cores.

    .venv/bin/python bench/bench_browser.py [--layers 10000] [--runs 5] [--record]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import recorded

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "data"
WIDE_MODULE = "Module.decoder.TransformerBlock.forward.0"
FLAT_MODULE = "Module.wide.Sequential.forward.0"
PAINT_TARGET_S = 1.5
EXPAND_TARGET_MS = 300.0
# The browser tests' support: their Chromium (path and flags), their wide dump and their server.
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "tests"))


def _run(command: list[str]) -> None:
    print("  $", " ".join(command), flush=True)
    subprocess.run(command, check=True, cwd=REPO)


def synthetic_compare(layers: int) -> Path:
    """The data dir holding the compare of a target and golden dump with `layers` layers."""
    root = DATA / f"syn{layers // 1000}k" if layers % 1000 == 0 else DATA / f"syn{layers}"
    out = root / "out"
    if not list(out.glob("*.vis.db")):
        print(f"building the {layers}-layer compare under {root} (minutes)...", flush=True)
        python = sys.executable
        for variant in ("golden", "target"):
            if not (root / variant).exists():
                _run([python, "bench/make_synthetic_dump.py", "--layers", str(layers),
                      "--out", str(root / variant), "--variant", variant])  # fmt: skip
        build = str(Path(python).with_name("graph_build"))
        _run([build, "-tp", str(root / "target"), "-gp", str(root / "golden"), "-o", str(out)])
    return out


def flat_build(children: int) -> Path:
    """The data dir holding a build with one module of `children` API children."""
    from wide_dump import write_wide_dump

    from graphboard.pipeline import BuildOptions, run_build

    root = DATA / f"flat{children}"
    out = root / "out"
    if not list(out.glob("*.vis.db")):
        print(f"building a module with {children} children under {root}...", flush=True)
        shutil.rmtree(root, ignore_errors=True)
        dump = write_wide_dump(root / "dump", children)
        run_build(BuildOptions(target=dump, golden=None, output_dir=out))
    return out


@contextmanager
def serving(data_dir: Path) -> Iterator[str]:
    """The viewer and its API over ``data_dir``: the tests' uvicorn-in-a-thread server."""
    from ci_support import live_server
    from graphboard.server.settings import Settings

    with live_server(Settings(data_dir=data_dir)) as base:
        yield base


def graph_id(data_dir: Path) -> str:
    found = sorted(data_dir.glob("*.vis.db"))[0]
    return found.name.removesuffix(".vis.db")


FIRST_PAINT_JS = """
(compare) => new Promise((resolve) => {
  const ready = () => document.querySelectorAll('#pane-target .tree-row[data-name]').length > 0
    && (!compare || document.querySelectorAll('#pane-golden .tree-row[data-name]').length > 0);
  const check = () => ready()
    ? requestAnimationFrame(() => resolve(performance.now()))  // the frame with the rows
    : requestAnimationFrame(check);
  check();
})
"""

EXPAND_JS = """
async (name) => {
  const pane = graphboard.panes.target;
  const row = [...document.querySelectorAll('#pane-target .tree-row')].find(r => r.dataset.name === name);
  const started = performance.now();
  row.dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
  await new Promise((resolve) => {
    const check = () => pane.model.isExpanded(name)
      ? requestAnimationFrame(() => requestAnimationFrame(resolve))  // painted
      : requestAnimationFrame(check);
    check();
  });
  return { ms: performance.now() - started, rows: pane.model.rows().length,
           dom: document.querySelectorAll('#pane-target .tree-row').length };
}
"""

LONG_TASKS_JS = """
() => { window.__longest = 0; new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__longest = Math.max(window.__longest, entry.duration);
}).observe({ type: 'longtask', buffered: false }); }
"""


def reveal_row(page: Any, name: str) -> None:
    page.evaluate("(n) => graphboard.panes.target.reveal(n)", name)
    page.wait_for_selector(f'#pane-target .tree-row[data-name="{name}"]')


def bench_compare(browser: Any, layers: int, runs: int) -> dict[str, float]:
    data_dir = synthetic_compare(layers)
    graph = graph_id(data_dir)
    results: dict[str, float] = {}
    with serving(data_dir) as base:
        import json
        import urllib.request

        with urllib.request.urlopen(f"{base}/api/graphs") as response:
            listing = json.load(response)
        nodes = sum(g["node_count"] for g in listing["files"][0]["graphs"])
        print(f"\n[compare] {graph}: {nodes:,} nodes in the file ({layers} layers)")
        paints: list[float] = []
        for run in range(runs + 1):
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            page.goto(f"{base}/?graph={graph}", wait_until="commit")
            painted = page.evaluate(FIRST_PAINT_JS, True) / 1000
            fcp = page.evaluate(
                "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? 0"
            )
            label = "cold (server opens the file)" if run == 0 else f"warm #{run}"
            print(
                f"  first paint of both trees: {painted:.3f} s  (FCP {fcp / 1000:.3f} s)  {label}"
            )
            if run:
                paints.append(painted)
            page.close()
        results["first_paint_s"] = statistics.median(paints)
        expands: list[float] = []
        for _ in range(runs):
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            page.goto(f"{base}/?graph={graph}")
            page.wait_for_selector("body[data-ready=true]")
            reveal_row(page, WIDE_MODULE)
            found = page.evaluate(EXPAND_JS, WIDE_MODULE)
            print(
                f"  expand {WIDE_MODULE} (10,000 children): {found['ms']:.0f} ms, "
                f"{found['rows']} rows loaded, {found['dom']} row elements"
            )
            expands.append(found["ms"])
            page.close()
        results["expand_ms"] = statistics.median(expands)
    return results


def bench_flat(browser: Any, children: int) -> dict[str, float]:
    data_dir = flat_build(children)
    graph = graph_id(data_dir)
    with serving(data_dir) as base:
        page = browser.new_page(viewport={"width": 1500, "height": 950})
        page.goto(f"{base}/?graph={graph}")
        page.wait_for_selector("body[data-ready=true]")
        page.evaluate(LONG_TASKS_JS)
        found = page.evaluate(EXPAND_JS, FLAT_MODULE)
        started = time.perf_counter()
        # Scroll to the end up to 20 times: each loads the next page of 1,000 (the expand
        # loaded the first), never waiting for a page past the last child.
        scrolls = min(20, max(0, (children - 1) // 1000))
        for _ in range(scrolls):
            before = page.evaluate("graphboard.panes.target.model.rows().length")
            page.evaluate(
                "() => { const h = graphboard.panes.target.host; h.scrollTop = h.scrollHeight; }"
            )
            page.wait_for_function(
                "n => graphboard.panes.target.model.rows().length > n", arg=before
            )
        scrolled = time.perf_counter() - started
        rows = page.evaluate("graphboard.panes.target.model.rows().length")
        dom = page.evaluate("document.querySelectorAll('#pane-target .tree-row').length")
        longest = page.evaluate("window.__longest")
        page.close()
    print(
        f"\n[flat] a module with {children:,} children: expand {found['ms']:.0f} ms; {scrolls} scrolls "
        f"to the end in {scrolled:.2f} s -> {rows:,} rows loaded, {dom} row elements in the DOM; "
        f"longest main-thread task {longest:.0f} ms"
    )
    return {"flat_expand_ms": found["ms"], "flat_longest_task_ms": longest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=10_000)
    parser.add_argument("--children", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--record", action="store_true", help="also write bench/results/browser.md")
    args = parser.parse_args()
    with recorded("browser", args.record):
        measure_and_report(args)


def measure_and_report(args: argparse.Namespace) -> None:
    from browser_support import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        results = bench_compare(browser, args.layers, args.runs)
        results.update(bench_flat(browser, args.children))
        browser.close()
    paint, expand = results["first_paint_s"], results["expand_ms"]
    print("\nsummary (medians of warm runs)")
    print(
        f"  first paint    {paint:.3f} s   target <= {PAINT_TARGET_S} s   ratio {paint / PAINT_TARGET_S:.2f}"
    )
    print(
        f"  expand 10k     {expand:.0f} ms   target <= {EXPAND_TARGET_MS:.0f} ms   ratio {expand / EXPAND_TARGET_MS:.2f}"
    )
    print(
        f"  expand 100k    {results['flat_expand_ms']:.0f} ms; longest task {results['flat_longest_task_ms']:.0f} ms"
    )


if __name__ == "__main__":
    main()
