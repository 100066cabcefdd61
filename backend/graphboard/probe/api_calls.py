"""Wrappers around ``torch``, ``torch.nn.functional`` and ``torch.Tensor`` calls.

Each wrapped call writes ``<Prefix>.<api>.<n>.forward`` (inputs recorded before the call, so
inplace ops show what they were given) and arms the hook for ``<Prefix>.<api>.<n>.backward``.
While the real implementation runs the session is quiet: calls it makes internally
(``F.relu`` calling ``torch.relu``) are not the model's calls and are not recorded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional

from graphboard.probe import api_catalog
from graphboard.probe.grad_flow import grad_nodes, watch_api
from graphboard.probe.patching import Patches
from graphboard.probe.session import Record, Session

API_NAMESPACES: tuple[tuple[str, Any, tuple[str, ...]], ...] = (
    ("Torch", torch, api_catalog.TORCH),
    ("Functional", torch.nn.functional, api_catalog.FUNCTIONAL),
    ("Tensor", torch.Tensor, api_catalog.TENSOR),
)


def record_api_call(
    session: Session,
    api: str,
    original: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    name = f"{api}.{session.counters.next(api)}.forward"
    parent = session.begin_call(name)
    with session.quiet():
        record: Record = session.leaves.inputs(args, kwargs, name)
        nodes_before = grad_nodes((args, kwargs))
        output = original(*args, **kwargs)
        record["output"] = session.leaves.output(output, f"{name}.output")
        watch_api(session, name, output, nodes_before)
    session.add_forward(name, parent, record)
    return output


RecordCall = Callable[[Session, str, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]


def wrap_call(
    session: Session, api: str, original: Callable[..., Any], record_call: RecordCall
) -> Callable[..., Any]:
    """``original`` recorded by ``record_call`` while the session accepts calls, and left
    alone otherwise (the probe's own work, calls made inside a recorded call)."""

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not session.accepts_call():
            return original(*args, **kwargs)
        return record_call(session, api, original, args, kwargs)

    return wrapper


def install_api_wrappers(session: Session, patches: Patches) -> None:
    for prefix, owner, names in API_NAMESPACES:
        for name in names:
            original = getattr(owner, name, None)
            if original is None or not callable(original) or isinstance(original, type):
                continue
            wrapper = wrap_call(session, f"{prefix}.{name}", original, record_api_call)
            patches.replace(owner, name, wrapper)
