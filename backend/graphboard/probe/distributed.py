"""Wrappers around ``torch.distributed`` calls: ``Distributed.<api>.<n>.forward`` records.

As in msprobe's dumps, the inputs are the arguments before the call and the output is the
arguments after it (``[tensor, src]`` for a broadcast given ``src=``), since collectives
work in place. Buffers that only receive data (``recv``'s tensor, ``all_gather``'s list) are
masked (``null``) on input: they hold uninitialised memory, whose statistics would change
from run to run. An asynchronous call (``isend``, ``irecv``, ``batch_isend_irecv``,
``async_op=True``) records its output when the caller waits on the returned work, when the
data has really arrived; the work object handed back is a thin wrapper that does this.

The wrappers replace the functions both in ``torch.distributed`` and in
``torch.distributed.distributed_c10d``, which checks ``P2POp.op`` against its own globals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from graphboard.probe import api_catalog
from graphboard.probe.api_calls import wrap_call
from graphboard.probe.leaves import Json
from graphboard.probe.patching import Patches
from graphboard.probe.session import Record, Session

# api -> (parameter name, position) of the argument that only receives data
_RECEIVE_BUFFERS: dict[str, tuple[str, int]] = {
    "recv": ("tensor", 0),
    "irecv": ("tensor", 0),
    "all_gather": ("tensor_list", 0),
    "all_gather_into_tensor": ("output_tensor", 0),
    "gather": ("gather_list", 1),
    "scatter": ("tensor", 0),
    "reduce_scatter": ("output", 0),
    "reduce_scatter_tensor": ("output", 0),
    "all_to_all": ("output_tensor_list", 0),
    "all_to_all_single": ("output", 0),
}


def _masked_inputs(
    api: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    masked_args, masked_kwargs = list(args), dict(kwargs)
    buffer = _RECEIVE_BUFFERS.get(api)
    if buffer is not None:
        name, position = buffer
        if position < len(masked_args):
            masked_args[position] = None
        elif name in masked_kwargs:
            masked_kwargs[name] = None
    return masked_args, masked_kwargs


class _PendingOutput:
    """The output of an asynchronous call, filled in once all its works are waited on."""

    def __init__(
        self, session: Session, record: Record, name: str, values: list[Any], works: int
    ) -> None:
        self.session = session
        self.record = record
        self.name = name
        self.values: list[Any] | None = values
        self.works_left = works
        session.finish_at_stop(self, self.finish)

    def work_done(self) -> None:
        self.works_left -= 1
        if self.works_left <= 0:
            self.finish()

    def finish(self) -> None:
        """Record the arguments as they are now (called early at stop if never waited on)."""
        if self.values is None:
            return
        values, self.values = self.values, None
        self.session.finished(self)
        with self.session.quiet():
            self.record["output"] = _output_leaves(self.session, self.name, values)


# Without distributed support there are no works to wrap; the class then is never used.
_WorkBase: Any = torch.distributed.Work if torch.distributed.is_available() else object


class RecordingWork(_WorkBase):
    """The work of an async call, passing everything to the real one and noting ``wait``."""

    def __init__(self, inner: Any, pending: _PendingOutput) -> None:
        super().__init__()
        self._inner = inner
        self._pending: _PendingOutput | None = pending

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        result = self._inner.wait(*args, **kwargs)
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.work_done()
        return result

    def is_completed(self) -> Any:
        return self._inner.is_completed()

    def is_success(self) -> Any:
        return self._inner.is_success()

    def exception(self) -> Any:
        return self._inner.exception()

    def source_rank(self) -> Any:
        return self._inner.source_rank()

    def result(self) -> Any:
        return self._inner.result()

    def synchronize(self) -> Any:
        return self._inner.synchronize()

    def get_future(self) -> Any:
        return self._inner.get_future()


def _output_leaves(session: Session, name: str, values: list[Any]) -> list[Json]:
    return [
        _leaf(session, value, f"{name}.output.{index}", receive_done=True)
        for index, value in enumerate(values)
    ]


def _leaf(session: Session, value: Any, path: str, *, receive_done: bool) -> Json:
    """Like LeafWriter.value, but a P2POp list masks receive buffers until they are filled."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(item, torch.distributed.P2POp) for item in value)
    ):
        return [
            session.leaves.p2p_op(item, f"{path}.{index}", mask_receive=not receive_done)
            for index, item in enumerate(value)
        ]
    return session.leaves.value(value, path)


def record_distributed_call(
    session: Session,
    api: str,
    original: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    key = f"Distributed.{api}"
    name = f"{key}.{session.counters.next(key)}.forward"
    parent = session.begin_call(name)
    with session.quiet():
        masked_args, masked_kwargs = _masked_inputs(api, args, kwargs)
        record: Record = {
            "input_args": [
                _leaf(session, value, f"{name}.input.{index}", receive_done=False)
                for index, value in enumerate(masked_args)
            ],
            "input_kwargs": {
                key: _leaf(session, value, f"{name}.input.{key}", receive_done=False)
                for key, value in masked_kwargs.items()
            },
            "output": [],
        }
        result = original(*args, **kwargs)
        values = [*args, *kwargs.values()]
        works = _works(result)
        if works:
            pending = _PendingOutput(session, record, name, values, len(works))
            result = _wrap_works(result, pending)
        else:
            record["output"] = _output_leaves(session, name, values)
    session.add_forward(name, parent, record)
    return result


def _works(result: Any) -> list[Any]:
    if isinstance(result, torch.distributed.Work):
        return [result]
    if (
        isinstance(result, list)
        and result
        and all(isinstance(item, torch.distributed.Work) for item in result)
    ):
        return result
    return []


def _wrap_works(result: Any, pending: _PendingOutput) -> Any:
    if isinstance(result, list):
        return [RecordingWork(work, pending) for work in result]
    return RecordingWork(result, pending)


def install_distributed_wrappers(session: Session, patches: Patches) -> None:
    if not torch.distributed.is_available():
        return
    import torch.distributed.distributed_c10d as c10d

    for api in api_catalog.DISTRIBUTED:
        original = getattr(torch.distributed, api, None)
        if original is None:
            continue
        wrapper = wrap_call(session, api, original, record_distributed_call)
        patches.replace(torch.distributed, api, wrapper)
        if getattr(c10d, api, None) is original:
            patches.replace(c10d, api, wrapper)
