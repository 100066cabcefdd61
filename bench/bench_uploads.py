"""Load on the CI API: N concurrent uploads of a small dump against a real server.

``graphboard serve`` runs in its own process (uvicorn, the embedded job runner); N client
threads each pack-free upload the same compare (convnet-stats target + golden, as .tar.gz)
at once, then every job is polled until it ends. Reported: the upload phase (wall time,
per-request latency), time until the last job is done, jobs per second, per-job latency
from upload to done, and whether every job finished (none lost, none failed).

    python bench/bench_uploads.py                  # 20 uploads, 2 build workers
    python bench/bench_uploads.py --uploads 50 --job-workers 2
    python bench/bench_uploads.py --restart        # kill -9 the server after the uploads,
                                                   # start it again: every job must still end
    python bench/bench_uploads.py --json           # the figures as JSON (the tests use this)
    python bench/bench_uploads.py --record         # both runs, written to bench/results/uploads.md
    python bench/bench_uploads.py --keep           # keep the data dir (catalog, builds) to inspect
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from harness import GRAPHBOARD, SHARED, free_port, record, serve_process

FIXTURE = SHARED / "fixtures" / "convnet-stats"


def _token(data: Path) -> str:
    done = subprocess.run(
        [GRAPHBOARD, "token", "create", "--data-dir", str(data), "--name", "bench"],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def _pack(folder: Path, dest: Path) -> Path:
    with tarfile.open(dest, "w:gz") as archive:
        archive.add(folder, arcname=folder.name)
    return dest


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass
class Figures:
    uploads: int
    job_workers: int
    restarted: bool
    accepted: int
    done: int
    failed: int
    lost: int
    upload_seconds: float
    upload_p50_ms: float
    upload_p95_ms: float
    all_done_seconds: float
    jobs_per_second: float
    job_p50_seconds: float
    job_p95_seconds: float
    job_max_seconds: float


def run(uploads: int, job_workers: int, restart: bool, keep: bool = False) -> Figures:
    work = Path(tempfile.mkdtemp(prefix="graphboard-bench-uploads-"))
    data = work / "data"
    data.mkdir()
    target = _pack(FIXTURE / "target", work / "target.tar.gz")
    golden = _pack(FIXTURE / "golden", work / "golden.tar.gz")
    token = _token(data)
    headers = {"Authorization": f"Bearer {token}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = serve_process(data, port, GRAPHBOARD_JOB_WORKERS=str(job_workers))
    started: dict[str, float] = {}
    latencies: list[float] = []
    lock = threading.Lock()

    def one(_index: int) -> str | None:
        with httpx.Client(base_url=base, timeout=120) as client:
            begin = time.perf_counter()
            with target.open("rb") as t, golden.open("rb") as g:
                response = client.post(
                    "/api/uploads",
                    headers=headers,
                    files={"target": ("target.tar.gz", t), "golden": ("golden.tar.gz", g)},
                )
            elapsed = time.perf_counter() - begin
        if response.status_code != 201:
            print(
                f"bench_uploads: refused: {response.status_code} {response.text}", file=sys.stderr
            )
            return None
        job_id = str(response.json()["job_id"])
        with lock:
            latencies.append(elapsed)
            started[job_id] = begin
        return job_id

    try:
        begin = time.perf_counter()
        with ThreadPoolExecutor(max_workers=uploads) as pool:
            ids = [job_id for job_id in pool.map(one, range(uploads)) if job_id is not None]
        upload_seconds = time.perf_counter() - begin
        if restart:
            server.send_signal(signal.SIGKILL)  # no shutdown: jobs are queued or running
            server.wait(timeout=10)
            server = serve_process(data, port, GRAPHBOARD_JOB_WORKERS=str(job_workers))
        finished: dict[str, tuple[str, float]] = {}
        deadline = time.monotonic() + 600
        with httpx.Client(base_url=base, timeout=60) as client:
            while len(finished) < len(ids) and time.monotonic() < deadline:
                for job_id in ids:
                    if job_id in finished:
                        continue
                    job = client.get(f"/api/jobs/{job_id}", headers=headers).json()
                    if job["status"] in ("done", "failed"):
                        finished[job_id] = (job["status"], time.perf_counter())
                time.sleep(0.05)
        all_done = time.perf_counter() - begin
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        if keep:
            print(f"bench_uploads: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    per_job = [end - started[job_id] for job_id, (_status, end) in finished.items()]
    done = sum(1 for status, _end in finished.values() if status == "done")
    return Figures(
        uploads=uploads,
        job_workers=job_workers,
        restarted=restart,
        accepted=len(ids),
        done=done,
        failed=len(finished) - done,
        lost=uploads - len(finished),
        upload_seconds=round(upload_seconds, 3),
        upload_p50_ms=round(1000 * statistics.median(latencies), 1) if latencies else 0.0,
        upload_p95_ms=round(1000 * _percentile(latencies, 0.95), 1) if latencies else 0.0,
        all_done_seconds=round(all_done, 3),
        jobs_per_second=round(done / all_done, 2) if all_done else 0.0,
        job_p50_seconds=round(statistics.median(per_job), 3) if per_job else 0.0,
        job_p95_seconds=round(_percentile(per_job, 0.95), 3) if per_job else 0.0,
        job_max_seconds=round(max(per_job), 3) if per_job else 0.0,
    )


def table(figures: Figures) -> str:
    rows = [
        ("concurrent uploads", f"{figures.uploads} (accepted {figures.accepted})"),
        ("build workers (GRAPHBOARD_JOB_WORKERS)", str(figures.job_workers)),
        ("server killed and restarted after the uploads", "yes" if figures.restarted else "no"),
        ("upload phase, wall", f"{figures.upload_seconds:.2f} s"),
        (
            "upload request p50 / p95",
            f"{figures.upload_p50_ms:.0f} / {figures.upload_p95_ms:.0f} ms",
        ),
        ("until every job ended", f"{figures.all_done_seconds:.2f} s"),
        ("throughput", f"{figures.jobs_per_second:.2f} jobs/s"),
        (
            "job latency, upload to done: p50 / p95 / max",
            f"{figures.job_p50_seconds:.2f} / {figures.job_p95_seconds:.2f} / "
            f"{figures.job_max_seconds:.2f} s",
        ),
        ("done / failed / lost", f"{figures.done} / {figures.failed} / {figures.lost}"),
    ]
    lines = ["| measure | value |", "|---|---:|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--job-workers", type=int, default=2)
    parser.add_argument("--restart", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--record", action="store_true", help="run with and without --restart")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    runs = [False, True] if args.record else [args.restart]
    results = [run(args.uploads, args.job_workers, restart, args.keep) for restart in runs]
    for figures in results:
        print(json.dumps(asdict(figures)) if args.json else table(figures))
    if args.record:
        text = (
            "## Concurrent uploads (loopback, `graphboard serve`, embedded runner)\n\n"
            "Each upload: convnet-stats target + golden as two .tar.gz (~70 KB), a compare of "
            "one rank (~0.1 s of building). The first jobs wait for the build processes to "
            "start (about a second of imports, begun when the first upload arrives).\n\n"
            + table(results[0])
            + "\n\n## The same, with the server killed (SIGKILL) after the uploads and started "
            "again\n\n" + table(results[1])
        )
        record("uploads", text)
    if any(figures.done != figures.uploads for figures in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
