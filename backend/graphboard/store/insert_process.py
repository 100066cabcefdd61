"""A new part file written by a second process, so that writing it overlaps reading and scoring.

:class:`InsertProcess` forks a child that creates the part (store/part_file.py) and runs on
it the calls the parent sends, in order, while the parent formats the next batch of rows: on
two cores the two halves of the work run at once.

It is forked before the dumps are read, while the parent's heap is small: the child shares no
graph with the parent (no copy-on-write faults) and receives nothing but pickled calls. It may
first do a job of its own while the parent reads the dumps (in a compare: read the golden
dump, build the golden graph and format its rows). It stands in for the part itself (the
writer functions take a :class:`~graphboard.store.statements.NodeWriter`).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from itertools import islice
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from queue import SimpleQueue
from typing import Any, NoReturn, TypeVar, cast

from graphboard.errors import StoreError
from graphboard.stopping import die_with_parent
from graphboard.store.statements import NodeWriter

# Rows per message: large enough that pickling and the pipe cost little per row, small enough
# that the child starts on them soon and the parent's buffers stay small (~2 MB a batch).
BATCH_ROWS = 500
PIPE_BYTES = 1024 * 1024  # Linux's default ceiling for an unprivileged process

# While a thread writes in_two's held calls, this process hands it the GIL this often (the
# default, 5 ms, would let the writing process run dry between two batches of ~1 MB).
DRAIN_SWITCH_SECONDS = 0.0005


T = TypeVar("T")

# A child's first job: given the new part and a way to hand the parent one object.
FirstJob = Callable[[NodeWriter, Callable[[Any], None]], None]


def can_fork() -> bool:
    # Forking a process that runs other threads (a server) can deadlock the child.
    return hasattr(os, "fork") and threading.active_count() == 1


class InsertProcess:
    """Runs a new part's calls (``insert_nodes``, ``execute``...) in a forked child.

    ``open_database`` creates the part at ``path`` in the child (a ``PartFile``), and
    ``encode_nodes``, if given, turns batches of tb_nodes rows into what its
    ``insert_encoded`` takes, in the sending process;
    ``first_job``, if given, writes into it before the first statement sent is run: work
    the child can do on its own while the parent is busy (the golden rows of a compare). It
    may hand the parent one object on the way (``reply``), which :meth:`first_reply` returns.
    Calls run in the order sent; :meth:`close` closes the part after the last of them and
    raises :class:`StoreError` if any failed. :meth:`abort` stops the child without waiting.
    """

    def __init__(
        self,
        path: Path,
        open_database: Callable[[Path], NodeWriter],
        first_job: FirstJob | None = None,
        encode_nodes: Callable[[list[tuple[Any, ...]], Path], bytes] | None = None,
    ) -> None:
        self.path = path
        self._encode = encode_nodes
        receiver, sender = Pipe(duplex=False)
        _widen(sender)
        status_receiver, status_sender = Pipe(duplex=False)
        reply_receiver, reply_sender = Pipe(duplex=False)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            sender.close()
            status_receiver.close()
            reply_receiver.close()
            _serve(parent, path, open_database, first_job, receiver, status_sender, reply_sender)
        receiver.close()
        status_sender.close()
        reply_sender.close()
        self._reply = reply_receiver
        self._pid: int | None = pid
        self._sender = sender
        self._status = status_receiver
        self._drain: _Drain | None = None  # see in_two

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> None:
        self._send("execute", (sql, tuple(parameters)))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        for batch in _batches(parameters):
            self._send("executemany", (sql, batch))

    def insert_nodes(self, rows: Iterable[tuple[Any, ...]], provisional: bool = False) -> None:
        for batch in _batches(rows):
            if self._encode is not None and not provisional:
                # encoded here (or in a helper of in_two), on the core that formats the rows
                self._send("insert_encoded", (self._encode(batch, self.path),))
            else:
                self._send("insert_nodes", (batch, provisional))

    def correct_node_links(self, corrections: Sequence[tuple[str, str]]) -> None:
        self._send("correct_node_links", (list(corrections),))

    def finish_nodes(self) -> None:
        self._send("finish_nodes", ())

    def first_reply(self) -> Any:
        """What the first job handed over, once it has; None if it did not (it failed: the
        caller does the work itself, and meets the error under its own name)."""
        try:
            return pickle.loads(self._reply.recv_bytes())
        except (EOFError, OSError):
            return None

    def in_two(self, first: Callable[[NodeWriter], T], second: Callable[[NodeWriter], None]) -> T:
        """Run ``first`` and ``second`` at once, as if one after the other; return what
        ``first`` returns (it must pickle).

        ``first`` runs in a helper forked from this process, sharing everything it has built,
        and sends its calls straight to the writing process. ``second`` runs here meanwhile,
        its calls pickled and held until the helper is done, then sent from a thread while
        this process goes on (later calls queue behind them): the part gets them in order.
        For work on what this process holds (scoring and formatting a graph's rows), on a
        core that would otherwise wait. If the helper fails, the part is
        abandoned and its error raised as a StoreError. Without fork, or with other threads
        running, the two run here one after the other.
        """
        self._wait_for_drain()
        if not can_fork():
            result = first(self)
            second(self)
            return result
        outcome_receiver, outcome_sender = Pipe(duplex=False)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the helper: its calls go out through the inherited pipe
            outcome_receiver.close()
            code = 1
            try:
                die_with_parent(parent)
                message = pickle.dumps((True, first(self)), protocol=pickle.HIGHEST_PROTOCOL)
                code = 0
            except BaseException as error:
                message = pickle.dumps((False, str(error) or type(error).__name__))
            finally:
                _send_quietly(outcome_sender, message)
                os._exit(code)
        outcome_sender.close()
        # Held on a drain not started yet: written from its thread once the helper is done,
        # while this process goes on (a compare's summaries: 3 s at a million records, which
        # had waited for the writing process to take these rows); later calls queue behind.
        drain = self._drain = _Drain(self._sender)
        try:
            second(self)
            succeeded, outcome = _outcome(outcome_receiver)
        except BaseException:  # an error, or a stop signal while waiting for the outcome
            os.kill(pid, signal.SIGKILL)
            raise
        finally:
            outcome_receiver.close()
            _, status = os.waitpid(pid, 0)
        if not succeeded or status != 0:
            if self._status.poll(0):  # the writing process failed first: its reason is the one
                self._finish()
            self.abort()
            raise StoreError(
                f"{self.path}: the process formatting rows failed: {outcome or f'status {status}'}"
            )
        drain.start()
        return cast(T, outcome)

    def _send(self, method: str, arguments: tuple[Any, ...]) -> None:
        if self._pid is None:
            raise StoreError(f"{self.path}: the database is already closed")
        message = pickle.dumps((method, arguments), protocol=pickle.HIGHEST_PROTOCOL)
        if self._drain is not None:
            self._drain.queue.put(message)
        else:
            self._write(message)

    def _write(self, message: bytes) -> None:
        try:
            self._sender.send_bytes(message)
        except OSError:  # the child is gone: say why
            self._finish()

    def close(self) -> None:
        """Wait for every call sent and the part's close; raise StoreError if one failed."""
        if self._pid is None:
            return
        self._wait_for_drain()
        with suppress(OSError):  # a child that already failed has closed its end
            self._sender.send_bytes(b"")
        self._finish()

    def _wait_for_drain(self) -> None:
        """Let in_two's held calls, and those queued behind them, be written."""
        drain, self._drain = self._drain, None
        if drain is not None and not drain.finish():
            self._finish()  # the child is gone: raise its reason

    def _finish(self) -> None:
        pid = self._pid
        assert pid is not None
        self._sender.close()
        self._reply.close()  # a reply never asked for no longer holds the child up
        # The pid is kept until the child is reaped: a stop signal during the wait (the
        # child finishing a large file) leaves it for abort() to kill.
        problem = _report(self._status)
        _, status = os.waitpid(pid, 0)
        self._pid = None
        if problem.startswith(f"{self.path}: "):  # a StoreError of the part: it names the file
            raise StoreError(problem)
        if problem or status != 0:
            raise StoreError(
                f"{self.path}: the process writing the database failed: {problem or f'status {status}'}"
            )

    def abort(self) -> None:
        """Stop the child now (on an error elsewhere); the caller removes the file."""
        pid, self._pid = self._pid, None
        if pid is None:
            return
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        drain, self._drain = self._drain, None
        if drain is not None:
            drain.finish()  # its write fails at once: the reader is gone
        self._sender.close()
        self._status.close()
        self._reply.close()


class _Drain:
    """Messages for a pipe, held on ``queue`` until :meth:`start`, then written in order by
    a thread (which spends its time in the pipe's write, without the GIL) until
    :meth:`finish`."""

    def __init__(self, sender: Connection) -> None:
        self.queue: SimpleQueue[bytes | None] = SimpleQueue()
        self._sender = sender
        self._failed = False
        self._switch = sys.getswitchinterval()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        sys.setswitchinterval(DRAIN_SWITCH_SECONDS)
        self._thread = threading.Thread(target=self._run, name="graphboard-drain", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (message := self.queue.get()) is not None:
            try:
                self._sender.send_bytes(message)
            except OSError:  # the reader is gone; finish() says so
                self._failed = True
                return

    def finish(self) -> bool:
        """Wait until everything queued is written (if started: else it is dropped); False
        if the reader went away."""
        if self._thread is None:
            return True
        self.queue.put(None)
        self._thread.join()
        sys.setswitchinterval(self._switch)
        return not self._failed


def _outcome(receiver: Connection) -> tuple[bool, Any]:
    """What an in_two helper sent: (succeeded, its result or its error); read before the
    helper is waited for, as a large outcome holds it until it is read."""
    try:
        return cast(tuple[bool, Any], pickle.loads(receiver.recv_bytes()))
    except (EOFError, OSError):
        return False, ""


def _report(status: Connection) -> str:
    """What a process said before it ended ("" if nothing), closing the pipe."""
    try:
        return status.recv_bytes().decode() if status.poll(None) else ""
    except EOFError:
        return ""
    finally:
        status.close()


def _batches(rows: Iterable[Any]) -> Iterable[list[Any]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, BATCH_ROWS)):
        yield batch


# What a part is asked to do: the NodeWriter calls, and insert_encoded (encode_nodes's bytes).
_CALLS = frozenset(
    {
        "execute",
        "executemany",
        "insert_nodes",
        "insert_encoded",
        "correct_node_links",
        "finish_nodes",
    }
)


def _widen(pipe: Connection) -> None:
    """Let a pipe hold a batch or two, so that the parent formats the next batch instead of
    waiting for the child to read (Linux; elsewhere the default size is only slower)."""
    with suppress(ImportError, AttributeError, OSError):
        import fcntl  # POSIX only, like fork

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _send_quietly(connection: Connection, message: bytes) -> None:
    with suppress(OSError):  # the parent closed its end without reading: it did not want it
        connection.send_bytes(message)


def _serve(
    parent: int,
    path: Path,
    open_database: Callable[[Path], NodeWriter],
    first_job: FirstJob | None,
    receiver: Connection,
    status: Connection,
    reply: Connection,
) -> NoReturn:
    """The child: do the first job, run each call received until the empty message, close
    the part, then report."""
    code = 1
    try:
        # Killed if the parent dies without stopping it: in a compare the first job reads the
        # golden dump for seconds without looking at the pipe, which would tell it.
        die_with_parent(parent)
        conn = open_database(path)
        sending: list[threading.Thread] = []

        def hand_over(value: Any) -> None:
            # From a thread: the parent may not read the reply at once (a pipe write blocks
            # until the reader drains it), and the job and the statements go on meanwhile.
            message = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            sending.append(threading.Thread(target=_send_quietly, args=(reply, message)))
            sending[-1].start()

        if first_job is not None:
            first_job(conn, hand_over)
        if not sending:
            reply.close()  # nothing to hand over: first_reply sees the end at once
        while message := receiver.recv_bytes():
            method, arguments = pickle.loads(message)
            assert method in _CALLS, method
            getattr(conn, method)(*arguments)
        conn.close()
        for thread in sending:
            thread.join()
        status.send_bytes(b"")
        code = 0
    except BaseException as error:  # reported to the parent, which raises it as a StoreError
        with suppress(BaseException):
            status.send_bytes((str(error) or type(error).__name__).encode())
    finally:
        os._exit(code)
