"""The embedded runner: builds on the server's own worker processes, no broker needed.

``job_workers`` slots, each a thread of the server that owns one *spawned* build process
(started on first use, then kept warm: importing the builder costs about a second). The
thread hands the process a job id over a pipe and waits; the process claims the job, builds
it and writes progress and the outcome to the catalog itself. So:

- the event loop never waits on a build, and the server never forks itself (a fork of a
  threaded server can deadlock; spawn starts a clean interpreter, and inside it run_build
  may fork or spawn as it does from the command line);
- a build that crashes its process (out of memory, a segfault) fails its job with the exit
  code, and the slot starts a fresh process for the next job;
- on shutdown the processes are stopped (SIGTERM: run_build removes its temporary files);
  their jobs stay ``running`` in the catalog and are queued again by the next start
  (:func:`records.recover`), up to ``job_attempts`` runs.

One server process per state folder: two servers with the embedded runner would both recover
the same jobs, so a second one refuses to start (:mod:`.claim`). A team server uses Celery
(``GRAPHBOARD_BROKER_URL``).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import signal
import threading
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from graphboard.executor import Executor
from graphboard.server.catalog import Catalog
from graphboard.server.jobs import claim, records
from graphboard.server.jobs.execute import end_job, remove_leftovers
from graphboard.server.settings import Settings
from graphboard.server.uploads import records as uploads
from graphboard.stopping import die_with_parent, stop_signals_raise

log = logging.getLogger("graphboard.jobs")
RUNNER = "local"
POLL_SECONDS = 0.2
JOBS_PER_PROCESS = 200  # then a fresh process: bounds what a long-lived builder can leak


def _serve_jobs(conn: Connection, settings_data: dict[str, Any], server: int) -> None:
    """The build process: run each job id it is sent, answer with the same id.

    A stop signal (the server's SIGTERM on shutdown, Ctrl+C reaching the whole group, a
    service manager's SIGHUP) unwinds the build, which removes its temporary files and
    stops its children; the job stays ``running``, for the next start to queue again.
    """
    with stop_signals_raise():
        try:
            # SIGTERM when the server dies, even by SIGKILL: an orphaned builder would
            # finish a job that the next server has already queued again.
            die_with_parent(server, signal.SIGTERM)
            _run_jobs(conn, Settings(**settings_data))
        except KeyboardInterrupt:
            return


def _run_jobs(conn: Connection, settings: Settings) -> None:
    from graphboard.server.jobs.execute import run_job

    executor = Executor()  # a build process does nothing else: it may start processes
    catalog = Catalog(settings.catalog_url)
    try:
        while True:
            try:
                job_id = conn.recv()
            except EOFError:
                return
            if job_id is None:
                return
            run_job(settings, catalog, job_id, f"{RUNNER}:{os.getpid()}", executor)
            conn.send(job_id)
    finally:
        catalog.dispose()


class _Slot:
    def __init__(self, runner: LocalRunner, index: int) -> None:
        self.runner = runner
        self.index = index
        self.process: BaseProcess | None = None
        self.conn: Connection | None = None
        self.jobs_done = 0
        self.warm_up = threading.Event()
        self.thread = threading.Thread(
            target=self._loop, name=f"graphboard-job-slot-{index}", daemon=True
        )

    def _ensure_process(self) -> tuple[BaseProcess, Connection]:
        if self.process is not None and self.conn is not None and self.process.is_alive():
            if self.jobs_done < JOBS_PER_PROCESS:
                return self.process, self.conn
            self._stop_process()
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_serve_jobs,
            args=(theirs, self.runner.settings.model_dump(), os.getpid()),
            name=f"graphboard-builder-{self.index}",
            # not a daemon: a build runs as the command does, and may start processes of its
            # own (a lone compare reads its golden side in one, several ranks run in a pool);
            # the slot stops it (_stop_process), and it stops itself if the server dies
            daemon=False,
        )
        process.start()
        theirs.close()
        self.process, self.conn, self.jobs_done = process, ours, 0
        return process, ours

    def _loop(self) -> None:
        while not self.runner.stopping.is_set():
            try:
                job_id = self.runner.queue.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if self.warm_up.is_set():
                    self.warm_up.clear()
                    self._ensure_process()
                continue
            if job_id is None:
                break
            try:
                self._run(job_id)
            except Exception:
                log.exception("job %s: the runner failed", job_id)
        self._stop_process()

    def _run(self, job_id: str) -> None:
        process, conn = self._ensure_process()
        try:
            conn.send(job_id)
        except OSError:  # the idle process died (killed from outside): start another
            self._stop_process()
            process, conn = self._ensure_process()
            conn.send(job_id)
        while not self.runner.stopping.is_set():
            try:
                if conn.poll(POLL_SECONDS):
                    conn.recv()
                    self.jobs_done += 1
                    return
            except (EOFError, OSError):
                break
            if not process.is_alive():
                break
        if self.runner.stopping.is_set():
            return  # the job stays running: the next start queues it again
        process.join(timeout=5)
        code = process.exitcode
        self.process = self.conn = None
        with self.runner.catalog.session() as session:
            records.fail(
                session,
                job_id,
                f"the build process died (exit code {code}"
                + (", killed: out of memory?)" if code == -signal.SIGKILL else ")"),
            )
        remove_leftovers(self.runner.settings, job_id)
        end_job(self.runner.settings, self.runner.catalog, job_id)

    def _stop_process(self) -> None:
        process, conn = self.process, self.conn
        self.process = self.conn = None
        if process is None:
            return
        if process.is_alive():
            process.terminate()
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
        if conn is not None:
            conn.close()


class LocalRunner:
    name = RUNNER

    def __init__(self, settings: Settings, catalog: Catalog) -> None:
        self.settings = settings
        self.catalog = catalog
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.stopping = threading.Event()
        self.slots = [_Slot(self, index) for index in range(settings.job_workers)]
        self.started = False

    def start(self) -> None:
        """Queue again what a previous server left unfinished, then start the slots."""
        claim.claim(self.settings.state_root)  # or a second server on this state refuses
        with self.catalog.session() as session:
            pending = records.recover(session, RUNNER, self.settings.job_attempts)
            uploads.sweep(
                session, self.settings.uploads_dir, keep_uploads=self.settings.keep_uploads
            )
        for job_id in pending:
            self.queue.put(job_id)
        for slot in self.slots:
            slot.thread.start()
        self.started = True

    def warm(self) -> None:
        """Start the build processes now (an upload is arriving): their start-up, about a
        second of imports, then overlaps the upload instead of delaying its job."""
        for slot in self.slots:
            slot.warm_up.set()

    def submit(self, job_id: str) -> None:
        self.queue.put(job_id)

    def stop(self) -> None:
        if not self.started:
            return
        self.stopping.set()
        for slot in self.slots:
            slot.thread.join(timeout=30)
        self.started = False
        claim.release(self.settings.state_root)
