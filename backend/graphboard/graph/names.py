"""Node-name arithmetic: forward/backward twins, module paths, call indexes."""

from __future__ import annotations

import re

_MODULE_FORWARD = re.compile(r"\.forward\.(\d+)$")
_WORD_BACKWARD = re.compile(r"\bbackward\b")
_WORD_FORWARD = re.compile(r"\bforward\b")


def is_module_backward(name: str) -> bool:
    # str methods, not the regex: this runs for every construct.json entry
    _head, marker, call = name.rpartition(".backward.")
    return bool(marker) and call.isdigit() and call.isascii()


def is_api_backward(name: str) -> bool:
    return name.endswith(".backward")


def forward_twin(name: str) -> str | None:
    """``X.backward.3`` -> ``X.forward.3``; ``Torch.mm.2.backward`` -> ``Torch.mm.2.forward``."""
    if is_module_backward(name):
        head, _, call = name.rpartition(".backward.")
        return f"{head}.forward.{call}"
    if name.endswith(".backward"):
        return name[: -len("backward")] + "forward"
    return None


def backward_twin(name: str) -> str | None:
    if _MODULE_FORWARD.search(name):
        return _MODULE_FORWARD.sub(r".backward.\1", name)
    if name.endswith(".forward"):
        return name[: -len("forward")] + "backward"
    return None


def swap_direction(name: str) -> str | None:
    """The forward/backward twin of a node, whichever direction it is."""
    return forward_twin(name) or backward_twin(name)


def module_prefix(name: str) -> str:
    """``Module.a.Linear.forward.0`` -> ``Module.a.Linear`` (the module path and class)."""
    return name.rsplit(".", 2)[0]


def strip_segments(name: str, count: int) -> str | None:
    parts = name.split(".")
    if len(parts) <= count:
        return None
    return ".".join(parts[:-count])
